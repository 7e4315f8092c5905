package deploy

import (
	"crypto/ed25519"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// TestClusteredBytesPerClient measures an ifca-dp client's bytes per round
// on the wire (protobuf, before gRPC and TLS framing) at d = 7,850
// (logistic regression) and d = 101,770 (the MLP), k = 2: the
// announcement it pulls (the k models, relayed by the shuffler) and the
// signed report it submits (one sealed message of d values, 8·d + 69 bytes
// with X25519), built by the services' own code. docs/DEPLOYMENT.md quotes
// its output (go test -run BytesPerClient -v ./deploy).
func TestClusteredBytesPerClient(t *testing.T) {
	for _, model := range []string{"logreg", "mlp"} {
		cfg := clusteredConfig("ifca-dp", 4, 1, map[string]float64{"k": 2, "nu": 1})
		cfg.Model = model
		st, err := NewSetup(cfg, testSplit(t, cfg), "bytes")
		if err != nil {
			t.Fatal(err)
		}
		d := st.Dim()
		key, err := seal.GenerateKey(seal.DefaultSuite)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		adb, err := store.Open(filepath.Join(dir, "a.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer adb.Close()
		an, err := NewAnalyzer(AnalyzerConfig{Setup: st, DB: adb, Key: key, Shuffler: wire.NewShufflerControlClient(nil), Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		ann, err := an.announcement(1, time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if err := ann.Validate(); err != nil {
			t.Fatal(err)
		}
		task := &wire.PullTaskResponse{Task: ann}
		cdb, err := store.Open(filepath.Join(dir, "c.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer cdb.Close()
		_, priv, err := ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		signer, err := pki.NewSigner(ClientID(0), priv)
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewClient(ClientConfig{Setup: st, Signer: signer, AnalyzerKey: key.Public(), DB: cdb, Shuffler: wire.NewShufflerClient(nil), Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.checkTask(ann); err != nil {
			t.Fatalf("the client refuses the analyzer's announcement: %v", err)
		}
		rep := &protocol.Report{Values: make([]float64, d)}
		for j := range rep.Values {
			rep.Values[j] = 0.01 * float64(j%7)
		}
		body, err := c.sealReport(1, rep)
		if err != nil {
			t.Fatal(err)
		}
		req := &wire.SubmitReportRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			t.Fatal(err)
		}
		req.Auth = c.auth()
		if err := sign(signer, testRand(), time.Now(), wire.Shuffler_SubmitReport_FullMethodName, 1, req); err != nil {
			t.Fatal(err)
		}
		if err := req.Validate(); err != nil {
			t.Fatal(err)
		}
		sealed := seal.MessageSize(seal.DefaultSuite, seal.KindReport, d)
		if len(req.Messages) != 1 || len(req.Messages[0].Ciphertext) != sealed || sealed != 8*d+69 {
			t.Fatalf("d = %d: %d messages, sealed report of %d bytes, want one of 8·d + 69 = %d", d, len(req.Messages), len(req.Messages[0].Ciphertext), 8*d+69)
		}
		down, up := proto.Size(task), proto.Size(req)
		if down < st.K*8*d || down > st.K*8*d+2048 || up < sealed || up > sealed+512 {
			t.Fatalf("d = %d: task %d bytes, report %d bytes: outside the expected overheads", d, down, up)
		}
		t.Logf("ifca-dp k = %d, d = %d (%s): pulls a task of %d bytes (k models of 8·d = %d), submits %d bytes (one sealed report of %d); %d bytes per client per round",
			st.K, d, model, down, 8*d, up, sealed, down+up)
	}
}
