package deploy

import (
	"fmt"
	"math"
	"math/rand/v2"
	goruntime "runtime"
	"slices"

	"shufflefl/account"
	"shufflefl/checks"
	"shufflefl/data"
	"shufflefl/fl"
	"shufflefl/protocol"
	"shufflefl/rng"
	"shufflefl/role"
	"shufflefl/runtime"
	"shufflefl/seal"
	"shufflefl/wire"
)

// ValueBound bounds every decrypted coordinate or report value the
// analyzer accepts (|v| <= ValueBound). It is a sanity bound, not a
// protocol's range: no local randomizer of package protocol with valid
// parameters comes near it, and it keeps a forged value from swamping the
// aggregate.
const ValueBound = 1e9

// Setup is what every role of one run agrees on: the run's configuration,
// the protocol built from it (with the floating-point-safe samplers), the
// model architecture and its initial weights, the clients' budget, shards
// and local training settings. The analyzer, the shuffler and every client
// build the same Setup from the same configuration (the run's task as
// published); the analyzer's announcements are checked against it.
type Setup struct {
	// Config is the run's configuration (SecureNoise forced on).
	Config runtime.Config
	// RunID names the run; it is bound into every sealed message.
	RunID string
	// Proto is the run's protocol.
	Proto protocol.Protocol
	// Model is the architecture; Init its initial weights.
	Model fl.Model
	Init  []float64
	// Budget is every client's budget for one round.
	Budget protocol.Budget
	// Charges says whether clients charge their ledgers (the protocol gives
	// them a local guarantee); LocalDelta whether a charge spends the
	// budget's delta too.
	Charges, LocalDelta bool
	// Meta says whether reports carry metadata values (APES's epsilon).
	Meta bool
	// Shards[i] are the training examples of client i (0-based).
	Shards [][]int
	// Train and Test are the examples (clients read their shard of Train;
	// the analyzer evaluates on Test). Under the "rotated" partition they
	// are the engine's: every client's samples transformed for its group,
	// and one transformed copy of the test set per group.
	Train, Test fl.Examples
	// TestGroups is the number of equal parts Test splits into for a
	// clustered protocol's evaluation (Config.Groups under "rotated", else
	// 1).
	TestGroups int
	// K is the number of models the analyzer keeps and announces: a
	// clustered protocol's k (protocol.Clustered), else 1.
	K int
	// Hypotheses are the other K−1 initial models of a clustered protocol
	// (the engine's, models[1:]; Init is models[0]); nil otherwise.
	Hypotheses [][]float64
	// DLevel is the d-privacy leakage of one participation (n/nu) of a
	// protocol whose guarantee is d-privacy, which each client's own
	// ledger composes (group-privacy paper, Theorem 1); 0 when there is
	// none (non-clustered protocols, and plain IFCA, whose leakage is
	// unbounded).
	DLevel float64
	// Local is the clients' local training.
	Local fl.LocalConfig
	// ServerLR scales the estimate into the model (FedSGD: −server-lr·lr).
	ServerLR float64
	// Accountant is a fresh run accountant (nil for protocols without a
	// privacy statement); the analyzer takes it.
	Accountant *account.Accountant
	// Plan is the pre-flight privacy plan.
	Plan runtime.Plan
}

// NewSetup validates cfg for a deployment and builds the run's Setup on
// split. It reuses the simulation engine's construction (runtime.New) for
// validation, protocol construction and the privacy pre-flight, so the
// deployment's protocol is the simulation's; the engine itself never runs.
//
// A deployment runs every registered client in every round (no sampling:
// clients-per-round 0 or equal to clients), the engine's partitions (iid,
// dirichlet, rotated: the same shards for the same seed), uniform budgets,
// and no Poisson-sampled protocol. Clustered protocols (ifca, ifca-dp) are
// supported while their k models fit one announcement
// (wire.MaxModelBytes) and a sealed whole report fits one message
// (wire.MaxCiphertextBytes). Anything else is refused with an error
// wrapping checks.ErrInvalid.
func NewSetup(cfg runtime.Config, split data.Split, runID string) (*Setup, error) {
	cfg.SecureNoise = true
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case cfg.ClientsPerRound != 0 && cfg.ClientsPerRound != cfg.Clients:
		return nil, checks.Invalidf("deploy: every client takes part in every round: clients-per-round must be 0 or %d", cfg.Clients)
	case cfg.EpsDist != "" || cfg.EpsFile != "":
		return nil, checks.Invalidf("deploy: personalized budgets are not supported (the analyzer cannot know which clients reported)")
	}
	if cfg.HoldoutClients > 0 || cfg.ValidateEvery > 0 {
		// Validation needs the held-out clients' losses at the analyzer,
		// which a deployment has no channel (and no privacy statement) for.
		return nil, checks.Invalidf("deploy: early stopping on held-out clients (holdout-clients, validate-every) is simulation-only")
	}
	if runID == "" || len(runID) > seal.MaxRunIDLen {
		return nil, checks.Invalidf("deploy: run id must have 1 to %d bytes", seal.MaxRunIDLen)
	}
	eng, err := runtime.New(cfg, split, nil)
	if err != nil {
		return nil, err
	}
	p := eng.Protocol()
	cl, clustered := p.(protocol.Clustered)
	if clustered {
		if err := fitsWire(cfg.Protocol, cl.Hypotheses(), eng.Model().Dim()); err != nil {
			return nil, err
		}
	}
	if ps, ok := p.(protocol.PoissonSampler); ok && ps.PoissonSampling() {
		return nil, checks.Invalidf("deploy: Poisson-sampled protocol %s is not supported", cfg.Protocol)
	}
	budgets, err := runtime.Budgets(cfg, nil)
	if err != nil {
		return nil, err
	}
	if cfg.TargetEpsilon > 0 {
		// The engine's pre-flight calibrated the uniform local budget (and
		// built the protocol with it) so that the planned rounds spend at
		// most the target; the analyzer voids a round that would pass it.
		budgets[0].Epsilon = eng.PrivacyPlan().LocalEpsilon
	}
	st := &Setup{Config: cfg, RunID: runID, Proto: p, Model: eng.Model(), Init: slices.Clone(eng.Weights()),
		Budget: budgets[0], Accountant: eng.Accountant(), Plan: eng.PrivacyPlan()}
	if err := st.partition(split); err != nil {
		return nil, err
	}
	st.K = 1
	if clustered {
		ms := eng.Models()
		st.K = len(ms)
		for _, h := range ms[1:] {
			st.Hypotheses = append(st.Hypotheses, slices.Clone(h))
		}
	}
	st.Local = fl.LocalConfig{Epochs: cfg.LocalEpochs, Steps: cfg.LocalSteps, Batch: cfg.Batch, LR: cfg.LR, Mu: cfg.Mu}
	st.ServerLR = cfg.ServerLR
	if cfg.Mode == "fedsgd" {
		st.Local.Mode = fl.FedSGD
		st.ServerLR = -cfg.ServerLR * cfg.LR
	}
	s := st.Shape(1)
	priv, err := p.Account(s, st.budgets(cfg.Clients))
	if err != nil {
		return nil, fmt.Errorf("deploy: accountant: %w", err)
	}
	st.Charges = priv.Private && !math.IsInf(priv.LocalEpsilon.Max, 1)
	st.LocalDelta = priv.LocalDelta > 0
	if d := priv.DPrivacy; d != nil && d.Level > 0 && !math.IsInf(d.Level, 1) {
		st.DLevel = d.Level
	}
	if clustered {
		// A clustered client releases a whole model (EncodeModel); there
		// is nothing to probe with Encode.
		return st, nil
	}
	// Probe the report's form with a zero update: metadata, and whether a
	// whole report is dense (a sealed report carries exactly d values).
	var rep protocol.Report
	if err := p.Encode(rand.New(rand.NewPCG(1, 2)), s, make([]float64, s.Dim), st.Budget, &rep); err != nil {
		return nil, fmt.Errorf("deploy: probing %s: %w", cfg.Protocol, err)
	}
	st.Meta = len(rep.Meta) > 0
	if p.Mode() != protocol.PerCoordinate && rep.Coords != nil {
		return nil, checks.Invalidf("deploy: %s sends sparse whole reports, which the sealed format does not carry", cfg.Protocol)
	}
	return st, nil
}

// fitsWire refuses a clustered run whose k models of dimension d do not
// fit the wire's limits: the announcement carries the k models
// (8·k·d bytes, at most wire.MaxModelBytes) and a client's report is one
// sealed message of d values (at most wire.MaxCiphertextBytes and
// seal.MaxDim values).
func fitsWire(name string, k, d int) error {
	if k > wire.MaxModels {
		return checks.Invalidf("deploy: %s with k = %d models: an announcement carries at most wire.MaxModels = %d", name, k, wire.MaxModels)
	}
	if b := 8 * k * d; b > wire.MaxModelBytes {
		return checks.Invalidf("deploy: %s announces k = %d models of d = %d parameters, %d bytes, over the announcement limit wire.MaxModelBytes = %d bytes (k <= %d at this d)",
			name, k, d, b, wire.MaxModelBytes, wire.MaxModelBytes/(8*d))
	}
	if d > seal.MaxDim {
		return checks.Invalidf("deploy: %s releases whole models of d = %d values, over seal.MaxDim = %d", name, d, seal.MaxDim)
	}
	if b := seal.MessageSize(seal.XWing, seal.KindReport, d); b > wire.MaxCiphertextBytes {
		return checks.Invalidf("deploy: %s releases whole models sealed in %d bytes, over the message limit wire.MaxCiphertextBytes = %d bytes", name, b, wire.MaxCiphertextBytes)
	}
	return nil
}

// partition builds the clients' shards and the training and test examples
// exactly as the engine does for the same seed and partition
// (runtime.PartitionData).
func (st *Setup) partition(split data.Split) error {
	p, err := runtime.PartitionData(st.Config, split)
	if err != nil {
		return err
	}
	st.Shards, st.Train, st.Test, st.TestGroups = p.Shards, p.Train, p.Test, p.TestGroups
	return nil
}

// Clustered returns the run's protocol as a clustered protocol, or nil.
func (st *Setup) Clustered() protocol.Clustered {
	cl, _ := st.Proto.(protocol.Clustered)
	return cl
}

// Dim returns the model dimension d.
func (st *Setup) Dim() int { return st.Model.Dim() }

// Shape is round t's shape as announced: every client expected.
func (st *Setup) Shape(t int) protocol.Shape {
	n := st.Config.Clients
	return protocol.Shape{Round: t, Dim: st.Dim(), Population: n, Participants: n, Sampled: n}
}

func (st *Setup) budgets(n int) []protocol.Budget {
	b := make([]protocol.Budget, n)
	for i := range b {
		b[i] = st.Budget
	}
	return b
}

// Spec is what the analyzer's seal.Opener expects of a message.
func (st *Setup) Spec() seal.Spec {
	sp := seal.Spec{Mode: seal.PerCoordinate, Dim: st.Dim(), Meta: st.Meta,
		Values: seal.Range{Lo: -ValueBound, Hi: ValueBound}, MetaValues: seal.Range{Lo: 0, Hi: ValueBound}}
	if st.Proto.Mode() != protocol.PerCoordinate {
		sp.Mode = seal.WholeReport
	}
	return sp
}

// Statement is the accountant's record of round t when reporters clients'
// reports were shuffled (the analyzer's count, from the batch) out of the
// Config.Clients sampled: the statement of the engine's Step for the same
// round (runtime's statement), at the true sampling rate.
func (st *Setup) Statement(t, reporters int) (account.Statement, protocol.Privacy, error) {
	s := st.Shape(t)
	if reporters <= 0 {
		return account.Statement{Round: t, SampleRate: s.SampleRate(), Sampled: s.Sampled}, protocol.Privacy{}, nil
	}
	s.Participants = reporters
	b := st.budgets(reporters)
	if err := st.Proto.Check(s, b); err != nil {
		return account.Statement{}, protocol.Privacy{}, fmt.Errorf("round %d: %w", t, err)
	}
	p, err := st.Proto.Account(s, b)
	if err != nil {
		return account.Statement{}, protocol.Privacy{}, fmt.Errorf("round %d: accountant: %w", t, err)
	}
	return account.Statement{
		Round: t, SampleRate: s.SampleRate(), Sampled: s.Sampled, Reporters: reporters, Released: true,
		Epsilon: p.CentralEpsilon, Delta: p.CentralDelta, Components: p.Components, RDP: p.RDP, Bound: p.Bound,
		Approximate: p.Approximate,
	}, p, nil
}

// roleLabel maps a sealed message's label to the role's public label.
func roleLabel(l seal.Label) int32 {
	switch l.Kind {
	case seal.KindMeta:
		return role.MetaLabel
	case seal.KindReport:
		return role.ReportLabel
	}
	return int32(l.Index)
}

// wireLabel is the label a SealedMessage carries on the wire: the
// coordinate, or 0 for metadata and whole reports (the sealed header is
// authoritative; the shuffler checks that the two agree).
func wireLabel(l seal.Label) uint32 {
	if l.Kind == seal.KindCoord {
		return l.Index
	}
	return 0
}

// streams chooses the generators of a role: crypto/rand, or in test mode
// the simulation's streams.
type streams struct{ seed *uint64 }

func (s streams) get(labels ...uint64) *rand.Rand {
	if s.seed == nil {
		return rng.NewCrypto()
	}
	return rng.Stream(*s.seed, labels...)
}

func sortedKeys(m map[string]float64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func goMaxProcs() int { return goruntime.GOMAXPROCS(0) }
