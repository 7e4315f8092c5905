package deploy

import (
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/learning/fl"
)

// A Trainer runs a client's local update in place of the in-process
// fl.Trainer (`shufflefl client --trainer`, a trainer process of package
// transport/trainer): it writes into dst what fl.Trainer.LocalUpdate would
// (the model delta in FedAvg mode, the gradient in FedSGD mode) for the
// client index of round t, trained from global on the examples shard of
// the setup's training set, drawing its randomness from r. A failure
// wrapping trainer.ErrTrainer makes the client sit the round out, before
// anything is charged or sent.
type Trainer interface {
	LocalUpdate(dst, global []float64, t, index int, r *rand.Rand, shard []int, local fl.LocalConfig) error
}

// localUpdate runs the client's local update of round t from w into dst,
// on its Trainer if it has one.
func (c *Client) localUpdate(dst, w []float64, t int64, r *rand.Rand, shard []int) error {
	if c.cfg.Trainer != nil {
		return c.cfg.Trainer.LocalUpdate(dst, w, int(t), c.cfg.Index, r, shard, c.st.Local)
	}
	_, err := c.tr.LocalUpdate(dst, r, w, c.st.Train, shard, c.st.Local)
	return err
}
