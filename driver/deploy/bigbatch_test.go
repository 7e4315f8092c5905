package deploy

import (
	"os"
	"sync"
	"testing"

	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// TestBigBatch: a batch larger than one chunk (e-apes, d = 7,850, 1,000
// whole reports of 62.8 kB: 63 MB) is forwarded in several chunks and
// released. Set SHUFFLEFL_BIGBATCH=1 to run it (about a minute).
func TestBigBatch(t *testing.T) {
	if os.Getenv("SHUFFLEFL_BIGBATCH") == "" {
		t.Skip("set SHUFFLEFL_BIGBATCH=1")
	}
	cfg := testConfig("e-apes", 1000, 1)
	cfg.Dataset = "fashion-mnist-sample"
	h := newHarnessConfig(t, cfg, 1)
	h.waitRound(t, 1)
	s, _ := seal.NewSealer(h.creds.HPKEPublic, h.st.RunID)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := 0; i < cfg.Clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ct, err := s.Seal(1, seal.Report, make([]float64, h.st.Dim()))
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := h.submit(t, i, 1, []*wire.SealedMessage{{Ciphertext: ct}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	h.waitFinished(t, 1)
}
