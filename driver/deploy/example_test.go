package deploy_test

import (
	"context"
	"fmt"
	"os"

	"github.com/shufflefl/shufflefl/driver/deploy"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/learning/data"
)

// ExampleRunLocal runs a whole deployment on 127.0.0.1 — analyzer and
// shuffler as gRPC servers over (mutual) TLS, 10 clients with their own
// SQLite ledgers — for two rounds of ss-double.
func ExampleRunLocal() {
	cfg := round.DefaultConfig()
	cfg.Protocol, cfg.Dataset, cfg.Clients, cfg.Rounds, cfg.LocalEpochs = "ss-double", "blobs", 10, 2, 1
	split, err := data.Load(cfg.Dataset, data.Options{Seed: cfg.Seed})
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := deploy.NewSetup(cfg, split, "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, err := os.MkdirTemp("", "deploy-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	res, err := deploy.RunLocal(context.Background(), st, deploy.LocalOptions{Dir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d rounds, %d reports accepted by the shuffler, %d messages rejected by the analyzer\n",
		res.Summary.Rounds, res.Shuffler.Accepted, res.Opened.Rejected())
	// Output: 2 rounds, 20 reports accepted by the shuffler, 0 messages rejected by the analyzer
}
