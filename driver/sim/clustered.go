package sim

import (
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/learning/ifca"
	"github.com/shufflefl/shufflefl/protocol"
)

// chooseHypothesis is the client's private choice (ChooseHypothesis) on
// the worker's scratch copy of its shard. It reads the models, which do not
// change during the client phase.
func (e *Engine) chooseHypothesis(w *worker, shard []int) (int, error) {
	return round.ChooseHypothesis(e.model, e.models, e.trainEx, shard, &w.sub)
}

// recordClusters charges the round's d-privacy leakage to its participants
// and fills the round's per-hypothesis sizes, choices and leakage.
func (e *Engine) recordClusters(res *round.RoundResult, parts []int) {
	sizes := e.an.ClusterSizes()
	res.Hypotheses = make([]round.Hypothesis, len(e.models))
	for h := range res.Hypotheses {
		if h < len(sizes) {
			res.Hypotheses[h].Size = sizes[h]
		}
	}
	leaks := make([][]float64, len(e.models))
	for i, c := range parts {
		if e.dlevel > 0 {
			e.dleak[c] += e.dlevel
		}
		h := e.chosen[i]
		res.Hypotheses[h].Chosen++
		leaks[h] = append(leaks[h], e.dleak[c])
	}
	for h, l := range leaks {
		st := protocol.Summarize(l)
		res.Hypotheses[h].MaxLeakage, res.Hypotheses[h].MedianLeakage = st.Max, st.Median
	}
}

// clusterAccuracy scores the round's choices (e.chosen, one per
// participant in parts) against the participants' rotation groups; nil
// when the clients have no known group.
func (e *Engine) clusterAccuracy(parts []int) (*round.ClusterAccuracy, error) {
	if e.groups == nil || len(e.chosen) != len(parts) {
		return nil, nil
	}
	truth := make([]int, len(parts))
	for i, c := range parts {
		truth[i] = e.groups[c]
	}
	a, err := ifca.AssignmentAccuracy(e.chosen, truth, len(e.models), e.cfg.Groups)
	if err != nil {
		return nil, err
	}
	return &round.ClusterAccuracy{Accuracy: a.Accuracy, Matched: a.Matched, Participants: a.Clients, Relabel: a.Relabel}, nil
}

// dprivacyRound summarises every client's cumulative d-privacy leakage.
func (e *Engine) dprivacyRound() *round.DPrivacyRound {
	s := protocol.Summarize(e.dleak)
	return &round.DPrivacyRound{Level: e.dlevel, MaxCumulative: s.Max, MedianCumulative: s.Median}
}

// testGroups splits the test set into its groups: one copy per rotation
// group under the "rotated" partition, the whole set otherwise.
func (e *Engine) testGroups() []fl.Examples {
	g := 1
	if e.groups != nil {
		g = e.cfg.Groups
	}
	n := len(e.testEx.Y) / g
	f := e.testEx.Features
	out := make([]fl.Examples, g)
	for i := range out {
		out[i] = fl.Examples{X: e.testEx.X[i*n*f : (i+1)*n*f], Y: e.testEx.Y[i*n : (i+1)*n], Features: f}
	}
	return out
}

// evaluateClustered evaluates every model on every test group. As in IFCA,
// a group's clients use the model with the lowest loss on their data: the
// round's test accuracy and loss average, over groups, those of the
// group's best model.
func (e *Engine) evaluateClustered(res *round.RoundResult) error {
	groups := e.testGroups()
	if res.Hypotheses == nil {
		res.Hypotheses = make([]round.Hypothesis, len(e.models))
	}
	for h, w := range e.models {
		hy := &res.Hypotheses[h]
		hy.Accuracy = make([]float64, len(groups))
		hy.Loss = make([]float64, len(groups))
		for g, ex := range groups {
			acc, loss, err := fl.Evaluate(e.model, w, ex, e.workers)
			if err != nil {
				return err
			}
			hy.Accuracy[g], hy.Loss[g] = acc, loss
		}
	}
	res.TestAccuracy, res.TestLoss = 0, 0
	for g, best := range round.BestPerGroup(res.Hypotheses) {
		res.TestAccuracy += res.Hypotheses[best].Accuracy[g] / float64(len(groups))
		res.TestLoss += res.Hypotheses[best].Loss[g] / float64(len(groups))
	}
	return nil
}

// Models returns the k models of a clustered protocol (models[0] is
// Weights()), or just the model; not copies: do not modify.
func (e *Engine) Models() [][]float64 {
	if e.models == nil {
		return [][]float64{e.w}
	}
	return e.models
}
