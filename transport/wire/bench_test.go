package wire

import (
	"crypto/rand"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"
)

// BenchmarkDecodeSubmitReport measures Unmarshal (proto decoding plus
// Validate) of a per-coordinate report: d sealed messages of 64 bytes.
func BenchmarkDecodeSubmitReport(b *testing.B) {
	for _, d := range []int{7850, 101770} {
		b.Run(fmt.Sprintf("d=%d", d), func(b *testing.B) {
			req := &SubmitReportRequest{Auth: validAuth(), Round: 1, Messages: make([]*SealedMessage, d)}
			buf := make([]byte, 64*d)
			rand.Read(buf)
			for i := range req.Messages {
				req.Messages[i] = &SealedMessage{Label: uint32(i), Ciphertext: buf[64*i : 64*(i+1)]}
			}
			enc, err := proto.Marshal(req)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(enc)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var r SubmitReportRequest
				if err := Unmarshal(enc, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeAnnouncement measures Unmarshal of an announcement with
// one model of d = 101,770 (the finiteness scan included).
func BenchmarkDecodeAnnouncement(b *testing.B) {
	a := validAnnouncement(b)
	w := make([]float64, 101770)
	for i := range w {
		w[i] = float64(i) * 1e-3
	}
	a.Models = []*Model{mustModel(b, "m", w)}
	enc, err := proto.Marshal(a)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var r RoundAnnouncement
		if err := Unmarshal(enc, &r); err != nil {
			b.Fatal(err)
		}
	}
}
