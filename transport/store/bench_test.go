package store

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shufflefl/shufflefl/privacy/account"
)

// BenchmarkLedgerCharge measures durable ledger appends through
// account.Ledger.Charge: one committed, fsynced transaction each.
func BenchmarkLedgerCharge(b *testing.B) {
	db := openTemp(b)
	l := account.NewLedger(db.LedgerStore())
	if err := l.SetDefaultCap(account.Cap{Epsilon: 1e12, Delta: 0.5}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := l.Charge(account.Release{Client: fmt.Sprint("c", i%100), Round: i / 100, Mechanism: "m", LocalEpsilon: 0.1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}

// BenchmarkChargeWithReport measures a client's charge plus its sealed
// report (d = 7,850 per-coordinate messages of about 64 bytes) in one
// transaction.
func BenchmarkChargeWithReport(b *testing.B) {
	db := openTemp(b)
	l := account.NewLedger(db.LedgerStore())
	l.SetDefaultCap(account.Cap{Epsilon: 1e12, Delta: 0.5})
	rep := make([]byte, 7850*64)
	rand.Read(rep)
	b.SetBytes(int64(len(rep)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := db.ChargeWithReport(l, account.Release{Client: "c", Round: i, Mechanism: "m", LocalEpsilon: 0.1}, rep); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "charges/s")
}

func benchReports(round int64, n, msgs, size int) []Report {
	rs := make([]Report, n)
	for i := range rs {
		rs[i] = Report{Round: round, Client: fmt.Sprint("client-", i), Nonce: make([]byte, 16)}
		rand.Read(rs[i].Nonce)
		buf := make([]byte, msgs*size)
		rand.Read(buf)
		for j := 0; j < msgs; j++ {
			rs[i].Messages = append(rs[i].Messages, SealedMessage{Label: uint32(j), Sealed: buf[j*size : (j+1)*size]})
		}
	}
	return rs
}

// BenchmarkInboxAccept measures the shuffler's durable inbox: reports per
// second with batch reports per transaction, for whole-report messages (1
// sealed message of 100 bytes) and per-coordinate reports (d = 7,850
// messages of 64 bytes).
func BenchmarkInboxAccept(b *testing.B) {
	for _, c := range []struct{ msgs, size, batch int }{
		{1, 100, 1}, {1, 100, 16}, {1, 100, 128},
		{7850, 64, 1}, {7850, 64, 16},
	} {
		b.Run(fmt.Sprintf("msgs=%d/batch=%d", c.msgs, c.batch), func(b *testing.B) {
			db := openTemp(b)
			if err := db.OpenInboxRound(0, nil); err != nil {
				b.Fatal(err)
			}
			pool := benchReports(0, max(1, 256/c.msgs), c.msgs, c.size)
			b.SetBytes(int64(c.msgs * c.size))
			b.ResetTimer()
			for i := 0; i < b.N; i += c.batch {
				n := min(c.batch, b.N-i)
				batch := make([]Report, n)
				for k := range batch {
					r := pool[(i+k)%len(pool)]
					r.Client = fmt.Sprint("c", i+k)
					r.Nonce = binary.LittleEndian.AppendUint64(make([]byte, 8, 16), uint64(i+k))
					r.Messages = append([]SealedMessage(nil), r.Messages...)
					m := r.Messages[0]
					m.Sealed = binary.LittleEndian.AppendUint64(append([]byte(nil), m.Sealed...), uint64(i+k)) // distinct digest
					r.Messages[0] = m
					batch[k] = r
				}
				errs, err := db.AcceptBatch(batch)
				if err != nil {
					b.Fatal(err)
				}
				for _, e := range errs {
					if e != nil {
						b.Fatal(e)
					}
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reports/s")
		})
	}
}

// BenchmarkAcceptorParallel compares Accept and the group-committing
// Acceptor under 64 concurrent submitters (whole-report messages).
func BenchmarkAcceptorParallel(b *testing.B) {
	for _, group := range []bool{false, true} {
		b.Run(fmt.Sprintf("group=%v", group), func(b *testing.B) {
			db := openTemp(b)
			if err := db.OpenInboxRound(0, nil); err != nil {
				b.Fatal(err)
			}
			acc, err := db.NewAcceptor(256)
			if err != nil {
				b.Fatal(err)
			}
			defer acc.Close()
			var next atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			work := make(chan struct{}, b.N)
			for i := 0; i < b.N; i++ {
				work <- struct{}{}
			}
			close(work)
			for g := 0; g < 64; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range work {
						i := next.Add(1)
						r := Report{Round: 0, Client: fmt.Sprint("c", i), Nonce: binary.LittleEndian.AppendUint64(make([]byte, 8, 16), uint64(i)),
							Messages: []SealedMessage{{0, binary.LittleEndian.AppendUint64(make([]byte, 92, 100), uint64(i))}}}
						var err error
						if group {
							err = acc.Accept(context.Background(), r)
						} else {
							err = db.Accept(r)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reports/s")
		})
	}
}

// BenchmarkReleaseRound measures the analyzer's release: the round-log
// update and a checkpoint of a d = 101,770 model (814 KB of float64) in one
// transaction.
func BenchmarkReleaseRound(b *testing.B) {
	db := openTemp(b)
	model := make([]byte, 101770*8)
	rand.Read(model)
	acc := json.RawMessage(`{"epsilon":1.23,"delta":1e-5}`)
	b.SetBytes(int64(len(model)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := db.OpenRound(int64(i)); err != nil {
			b.Fatal(err)
		}
		if err := db.ReleaseRound(Checkpoint{Round: int64(i), Model: model, Accountant: acc}, RoundCounts{Received: 1, Accepted: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "releases/s")
}

// BenchmarkFsyncBaseline is the floor under every durable write: write
// 100 bytes and fsync, either appending to a growing file (the file size,
// i.e. metadata, changes on every sync) or overwriting the same block (as a
// reused WAL mostly does). A WAL commit with synchronous=FULL costs at least
// one such fsync.
func BenchmarkFsyncBaseline(b *testing.B) {
	for _, mode := range []string{"append", "overwrite"} {
		b.Run(mode, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "fsync"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, 100)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if mode == "append" {
					_, err = f.Write(buf)
				} else {
					_, err = f.WriteAt(buf, 0)
				}
				if err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fsyncs/s")
		})
	}
}
