package deploy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	goruntime "runtime"
	"slices"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// ValueBound bounds every decrypted coordinate or report value the
// analyzer accepts (|v| <= ValueBound). It is a sanity bound, not a
// protocol's range: no local randomizer of package protocol with valid
// parameters comes near it, and it keeps a forged value from swamping the
// aggregate. Split-mix's shares mod q (up to 2^48) have their own range,
// the integers of [0, q-1] (Spec).
const ValueBound = 1e9

// Setup is what every role of one run agrees on: the run's configuration,
// the protocol built from it (with the floating-point-safe samplers), the
// model architecture and its initial weights, the clients' budget, shards
// and local training settings. The analyzer, the shuffler and every client
// build the same Setup from the same configuration (the run's task as
// published); the analyzer's announcements are checked against it.
type Setup struct {
	// Config is the run's configuration (SecureNoise forced on).
	Config round.Config
	// RunID names the run; it is bound into every sealed message.
	RunID string
	// Proto is the run's protocol.
	Proto protocol.Protocol
	// Model is the architecture; Init its initial weights.
	Model fl.Model
	Init  []float64
	// Budget is the run's uniform budget for one round (a client that
	// declares no budget of its own has it).
	Budget protocol.Budget
	// Budgets[i] is client i's budget for one round: the engine's budget of
	// client i (round.Budgets with the configuration's --eps-dist or
	// --eps-file), Budget for every client when the budgets are uniform.
	Budgets []protocol.Budget
	// Personalized says whether the protocol takes a budget per client
	// (its protocol.Info says "personalized"); for any other protocol every
	// client must have Budget.
	Personalized bool
	// OwnBudgets says the run gives clients their own budgets (--eps-dist
	// or --eps-file): there is no uniform budget for a client to fall back
	// on, so every client must declare its budget at registration, and only
	// registered clients may report.
	OwnBudgets bool
	// PerRound is m, the number of clients the shuffler samples for a
	// round (clients-per-round; Config.Clients when every registered client
	// is offered every round); under Poisson sampling the expected number.
	PerRound int
	// Poisson says the protocol samples clients independently at rate
	// PerRound/Config.Clients (split-mix): the shuffler keeps every
	// registered client with that probability (PoissonRate).
	Poisson bool
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
	Plan round.Plan
}

// NewSetup validates cfg for a deployment and builds the run's Setup on
// split. It runs the simulation's pre-flight (round.Prepare and
// Preflight: protocol construction, calibration to a target, the planned
// composition) and takes its initial models from round.InitModels, so the
// deployment's protocol and models are the simulation's. (The engine's
// trial round, which draws round 1's noise once on zero updates, is
// simulation-only.)
//
// A deployment takes the engine's partitions (iid, dirichlet, rotated:
// the same shards for the same seed). Of the Poisson-sampled protocols it
// takes split-mix (without its simulation-only fast path; the shuffler
// draws the Poisson sample, deployablePoisson), not dp-central.
// Clustered protocols (ifca, ifca-dp) are supported while their k models
// fit one announcement (wire.MaxModelBytes) and a sealed whole report fits
// one message (wire.MaxCiphertextBytes). Anything else is refused with an
// error wrapping checks.ErrInvalid.
//
// Client sampling (clients-per-round m below clients) is the shuffler's:
// it draws a fixed-size sample of m of the registered clients for every
// round, without replacement (all of them when fewer than m registered),
// and the analyzer's statement is at the true rate sampled/registered
// (the batch's RoundFacts, which the analyzer machine decides on).
//
// Personalized budgets (--eps-dist, or --eps-file, which NewSetup reads)
// give client i the engine's budget of client i (Budgets); a client
// declares its budget at registration and the analyzer's statement is
// made from the budgets of the round's reporters. A protocol that does not
// take personalized budgets is refused with them, and so is a target
// epsilon with them (the engine's calibration scales every budget; a
// deployment does not reproduce it).
func NewSetup(cfg round.Config, split data.Split, runID string) (*Setup, error) {
	return newSetup(cfg, wholeData{split}, runID)
}

// newSetup is NewSetup on the examples src gives: the whole dataset
// (NewSetup) or one client's shard (NewClientSetup).
func newSetup(cfg round.Config, src setupData, runID string) (*Setup, error) {
	cfg.SecureNoise = true
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.HoldoutClients > 0 || cfg.ValidateEvery > 0 {
		// Validation needs the held-out clients' losses at the analyzer,
		// which a deployment has no channel (and no privacy statement) for.
		return nil, checks.Invalidf("deploy: early stopping on held-out clients (holdout-clients, validate-every) is simulation-only")
	}
	if runID == "" || len(runID) > seal.MaxRunIDLen {
		return nil, checks.Invalidf("deploy: run id must have 1 to %d bytes", seal.MaxRunIDLen)
	}
	personalizedCfg := cfg.EpsDist != "" || cfg.EpsFile != ""
	info, err := protocol.Describe(cfg.Protocol)
	if err != nil {
		return nil, err
	}
	personalized := strings.HasPrefix(info.Budgets, "personalized")
	switch {
	case personalizedCfg && !personalized:
		return nil, checks.Invalidf("deploy: protocol %s does not take personalized budgets (it takes %s): drop --eps-dist/--eps-file", cfg.Protocol, info.Budgets)
	case personalizedCfg && cfg.TargetEpsilon > 0:
		return nil, checks.Invalidf("deploy: --target-epsilon with personalized budgets is not supported (the engine calibrates every budget by one scale; give the budgets themselves)")
	}
	explicit, err := readEpsFile(cfg.EpsFile)
	if err != nil {
		return nil, err
	}
	budgets, err := round.Budgets(cfg, explicit)
	if err != nil {
		return nil, err
	}
	pre, err := prepare(cfg, src, budgets)
	if err != nil {
		return nil, err
	}
	p := pre.Proto
	cl, clustered := p.(protocol.Clustered)
	k := 1
	if clustered {
		k = cl.Hypotheses()
		if err := fitsWire(cfg.Protocol, k, pre.Model.Dim()); err != nil {
			return nil, err
		}
	}
	if err := deployableSampling(pre); err != nil {
		return nil, err
	}
	if cfg.TargetEpsilon > 0 {
		// The pre-flight calibrated the uniform local budget (and built the
		// protocol with it) so that the planned rounds spend at most the
		// target; the analyzer voids a round that would pass it.
		for i := range budgets {
			budgets[i].Epsilon = pre.Plan.LocalEpsilon
		}
	}
	uniform := protocol.Budget{Epsilon: cfg.Epsilon * epsScale(cfg), Delta: account.RoundDelta(cfg.Delta, cfg.Rounds)}
	if cfg.TargetEpsilon > 0 || !personalizedCfg {
		uniform = budgets[0]
	}
	ms := round.InitModels(pre.Config, pre.Model, k)
	st := &Setup{Config: cfg, RunID: runID, Proto: p, Model: pre.Model, Init: ms[0], Hypotheses: ms[1:],
		Budget: uniform, Budgets: budgets, Personalized: personalized, OwnBudgets: personalizedCfg, PerRound: pre.PerRound,
		Poisson: pre.Poisson, Accountant: pre.Accountant, Plan: pre.Plan, K: k}
	if len(st.Hypotheses) == 0 {
		st.Hypotheses = nil
	}
	if err := src.fill(st); err != nil {
		return nil, err
	}
	st.Local, st.ServerLR = round.Training(cfg)
	s := st.Shape(1)
	priv, err := p.Account(s, st.Budgets[:s.Participants])
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

// setupData is where a Setup's examples come from: the whole dataset
// (wholeData: the analyzer, the shuffler, deploy-local, a client without a
// shard file) or one client's shard (shardData).
type setupData interface {
	// shape returns the training set's features and classes (the model's
	// input and output sizes), or an error if there is no data.
	shape(cfg round.Config) (features, classes int, err error)
	// fill sets the Setup's shards and examples.
	fill(st *Setup) error
}

// wholeData is the whole dataset, partitioned as the engine does.
type wholeData struct{ split data.Split }

func (w wholeData) shape(cfg round.Config) (int, int, error) {
	split := w.split
	if split.Train == nil || split.Test == nil || split.Train.Len() == 0 || split.Test.Len() == 0 {
		return 0, 0, checks.Invalidf("dataset %q has an empty training or test set", cfg.Dataset)
	}
	return split.Train.Features, split.Train.Classes, nil
}

// fill builds the clients' shards and the training and test examples
// exactly as the engine does for the same seed and partition
// (round.PartitionData).
func (w wholeData) fill(st *Setup) error {
	p, err := round.PartitionData(st.Config, w.split)
	if err != nil {
		return err
	}
	st.Shards, st.Train, st.Test, st.TestGroups = p.Shards, p.Train, p.Test, p.TestGroups
	if st.Shards == nil { // partition "sampled": a deployment holds every shard
		st.Shards = make([][]int, p.Clients())
		for c := range st.Shards {
			st.Shards[c] = p.Shard(c)
		}
	}
	return nil
}

// Clustered returns the run's protocol as a clustered protocol, or nil.
func (st *Setup) Clustered() protocol.Clustered {
	cl, _ := st.Proto.(protocol.Clustered)
	return cl
}

// readEpsFile reads the personalized budgets of --eps-file (nil without
// one).
func readEpsFile(path string) ([]float64, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, checks.Invalidf("eps-file: %v", err)
	}
	defer f.Close()
	eps, err := account.ReadBudgets(f)
	if err != nil {
		return nil, fmt.Errorf("eps-file %s: %w", path, err)
	}
	return eps, nil
}

func epsScale(cfg round.Config) float64 {
	if cfg.EpsScale == 0 {
		return 1
	}
	return cfg.EpsScale
}

// Dim returns the model dimension d.
func (st *Setup) Dim() int { return st.Model.Dim() }

// Shape is round t's shape as announced, the engine's before it samples:
// the configured population, and the PerRound clients sampled expected to
// report (clients encode with it).
func (st *Setup) Shape(t int) protocol.Shape {
	n := st.PerRound
	return protocol.Shape{Round: t, Dim: st.Dim(), Population: st.Config.Clients, Participants: n, Sampled: n}
}

// Sampling says whether the shuffler samples clients (Poisson sampling,
// or PerRound below the configured clients) rather than offering every
// round to every registered client.
func (st *Setup) Sampling() bool { return st.Poisson || st.PerRound < st.Config.Clients }

// ClientBudget is client i's budget for one round (Budgets[i]).
func (st *Setup) ClientBudget(i int) protocol.Budget { return st.Budgets[i] }

// MaxEpsilon is the largest budget epsilon of the run: no client may
// declare more (the pre-flight plan and the analyzer's bound on any
// client's spend assume it).
func (st *Setup) MaxEpsilon() float64 {
	m := st.Budget.Epsilon
	if st.OwnBudgets {
		m = 0 // Budget is nobody's
	}
	for _, b := range st.Budgets {
		m = math.Max(m, b.Epsilon)
	}
	return m
}

// Spec is what the analyzer's seal.Opener expects of a message: values
// within ±ValueBound, or for a protocol of shares mod q (split-mix) the
// integers of [0, q-1].
func (st *Setup) Spec() seal.Spec {
	sp := seal.Spec{Mode: seal.PerCoordinate, Dim: st.Dim(), Meta: st.Meta,
		Values: seal.Range{Lo: -ValueBound, Hi: ValueBound}, MetaValues: seal.Range{Lo: 0, Hi: ValueBound}}
	if st.Proto.Mode() != protocol.PerCoordinate {
		sp.Mode = seal.WholeReport
	}
	if m, ok := st.Proto.(modular); ok {
		// Shares mod q: integers in [0, q-1], nothing else.
		sp.Values, sp.Integers = seal.Range{Lo: 0, Hi: float64(m.Modulus() - 1)}, true
	}
	// A value its randomizer cannot output (R_{gamma,b}'s integers in
	// {0, ..., b}, Clip-Laplace's [-C, C]) is refused at opening (reason
	// range): it carries no blanket, and the round is stated from the
	// values that remain (role.Analyzer).
	if c, ok := st.Proto.(protocol.Counted); ok {
		if cs, err := c.Counts(st.Shape(1)); err == nil && cs.Values.Bounded() {
			sp.Values, sp.Integers = seal.Range{Lo: cs.Values.Lo, Hi: cs.Values.Hi}, cs.Values.Integer
		}
	}
	return sp
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

// prepare validates the run's data and model for cfg and runs the
// simulation's pre-flight (round.Prepare, Preflight): the deployment's
// protocol and budgets are the simulation's for the same configuration.
func prepare(cfg round.Config, src setupData, budgets []protocol.Budget) (*round.Prepared, error) {
	features, classes, err := src.shape(cfg)
	if err != nil {
		return nil, err
	}
	model, err := fl.NewModel(cfg.Model, features, classes)
	if err != nil {
		return nil, err
	}
	if local, _ := round.Training(cfg); local.Validate() != nil {
		return nil, local.Validate()
	}
	pre, err := round.Prepare(cfg, model, budgets)
	if err != nil {
		return nil, err
	}
	if err := pre.Preflight(); err != nil {
		return nil, err
	}
	return pre, nil
}
