package round

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
)

// Config is a complete description of a simulated federated training run.
// The YAML keys are the command-line flag names of `shufflefl run`.
type Config struct {
	Protocol string `yaml:"protocol"`
	Dataset  string `yaml:"dataset"`
	DataDir  string `yaml:"data-dir"`
	Model    string `yaml:"model"`

	// Clients is the population N.
	Clients int `yaml:"clients"`
	// ClientsPerRound is n, the clients taking part in each round
	// (0 means all). Protocols that need Poisson sampling (dp-central) use
	// q = n/N as the inclusion probability.
	ClientsPerRound int `yaml:"clients-per-round"`
	// SamplesPerClient is m, the training samples per client under IID
	// partitioning (0 splits the training set equally).
	SamplesPerClient int `yaml:"samples-per-client"`
	// Partition is "iid", "dirichlet" or "rotated" (IID shards, clients in
	// Groups groups whose data is rotated by 90°·g, or by 2πg/Groups in
	// feature space for non-image data: the clustered-FL setting of IFCA and
	// the group-privacy paper), or "sampled" (each client's SamplesPerClient
	// examples drawn independently: overlapping shards, drawn on demand,
	// for populations larger than the data).
	Partition string  `yaml:"partition"`
	Alpha     float64 `yaml:"alpha"`
	Groups    int     `yaml:"groups"`

	Rounds      int     `yaml:"rounds"`
	LocalEpochs int     `yaml:"local-epochs"`
	LocalSteps  int     `yaml:"local-steps"`
	Batch       int     `yaml:"batch"`
	LR          float64 `yaml:"lr"`
	ServerLR    float64 `yaml:"server-lr"`
	Mu          float64 `yaml:"mu"`
	// Mode is "fedavg" (clients send model deltas) or "fedsgd" (one gradient).
	Mode string `yaml:"mode"`

	Clip float64 `yaml:"clip"`
	// Epsilon is every client's local epsilon for its whole update in one
	// round (user level), for every private protocol with local noise; a
	// protocol that spends per coordinate derives eps/d itself. dp-central
	// ignores it (see TargetEpsilon).
	Epsilon float64 `yaml:"epsilon"`
	// EpsDist names a personalized budget distribution (APES Table 2, E-APES
	// Table 3); it overrides Epsilon for the clients' budgets, which are user
	// level like Epsilon.
	EpsDist string `yaml:"eps-dist"`
	// EpsFile is a file with one user-level epsilon per client (read by the
	// CLI).
	EpsFile string `yaml:"eps-file"`
	// EpsScale multiplies every client's budget (0 means 1). The named
	// distributions are in their papers' units — APES Table 2 states
	// per-coordinate budgets — so `--eps-dist uniform2 --eps-scale 7850`
	// gives APES's user-level budgets for d = 7,850.
	EpsScale float64 `yaml:"eps-scale"`
	// Delta is the target central delta of the whole run; every protocol
	// derives its per-round (account.RoundDelta) and per-dimension deltas
	// from it, and the run's accountant composes the rounds within it.
	Delta float64 `yaml:"delta"`
	// TargetEpsilon, if positive, is the target cumulative central epsilon
	// of the whole run: before round 1 the local budgets (the uniform
	// Epsilon, or a common scale of the personalized budgets) are calibrated
	// so that the planned rounds spend at most TargetEpsilon at Delta, and a
	// round that would exceed it is not released. dp-central requires it (its
	// noise is calibrated to it).
	TargetEpsilon float64 `yaml:"target-epsilon"`
	// ClientCap is every client's total local epsilon over the whole run
	// (0 means no cap). The engine's ledger refuses a release that would
	// exceed it, and the client sits the round out (group-privacy paper: a
	// client decides right before releasing). For a protocol whose
	// guarantee is d-privacy (ifca-dp) it caps the client's composed
	// d-privacy leakage (n/nu per participation) instead.
	ClientCap float64 `yaml:"client-cap"`
	// Options are protocol-specific numeric options (k, np, nu, b, ...).
	Options map[string]float64 `yaml:"options,omitempty"`

	// HoldoutClients is the number of validation clients held out of
	// training (0: none). They get shards like the training clients (the
	// data is partitioned into Clients+HoldoutClients shards, rotation
	// groups drawn over all of them) but are never sampled, charged or
	// counted in the population of the privacy statement: the statement
	// covers the Clients training clients only, and the validation
	// clients' losses, which decide when the run stops, are not privatized
	// (they play the part of a validation set the analyzer owns).
	HoldoutClients int `yaml:"holdout-clients,omitempty"`
	// ValidateEvery is the validation interval in rounds (0: never): every
	// ValidateEvery rounds each validation client evaluates the model(s) on
	// its shard and keeps its lowest loss (the model it would choose), and
	// the validation loss is their example-weighted mean.
	ValidateEvery int `yaml:"validate-every,omitempty"`
	// Patience stops the run after this many validations without a lower
	// validation loss (0: never stop early); see fl.EarlyStop.
	Patience int `yaml:"patience,omitempty"`

	// SecureNoise makes every protocol draw its continuous noise with the
	// floating-point-safe samplers (Mironov 2012) and split-mix its Skellam
	// noise with the integer-only exact sampler, as a deployment must.
	SecureNoise bool `yaml:"secure-noise"`

	Seed    uint64 `yaml:"seed"`
	Workers int    `yaml:"workers"`
	// Faithful makes the shuffler materialise, pad and permute every report
	// (as a deployment does) instead of streaming reports into the aggregate.
	Faithful bool   `yaml:"faithful"`
	Out      string `yaml:"out"`

	// DataSource are the settings of the users' datasets and of
	// synthetic-fedprox (datasource.go).
	DataSource `yaml:",inline"`
}

// DefaultConfig holds the settings every protocol shares before its own
// defaults (DefaultsFor, applied by ApplyDefaults to the settings a user
// does not give): logistic regression on Fashion-MNIST, 1,000 clients of 60
// samples (FLAME's n users x m samples), all taking part in every round,
// 5 local epochs of SGD (batch 10, lr 0.1) for 30 rounds, clip 0.1. Its
// protocol is nonprivate (about 82% test accuracy in well under a minute on
// 2 cores, docs/PERFORMANCE.md), so that code setting only some fields gets
// no budget to misread; `shufflefl run` without flags runs RunDefaults
// (DefaultProtocol with its defaults: a private run).
func DefaultConfig() Config {
	return Config{
		Protocol:         "nonprivate",
		Dataset:          "fashion-mnist",
		Model:            "logreg",
		Clients:          1000,
		ClientsPerRound:  0,
		SamplesPerClient: 0,
		Partition:        "iid",
		Alpha:            0.5,
		Groups:           4,
		Rounds:           30,
		LocalEpochs:      5,
		Batch:            10,
		LR:               0.1,
		ServerLR:         1,
		Mode:             "fedavg",
		Clip:             0.1,
		Epsilon:          1,
		Delta:            1e-5,
		Seed:             1,
		Out:              "out",
	}
}

// Validate rejects settings no run can honour. Errors wrap checks.ErrInvalid
// and name the setting.
func (c *Config) Validate() error {
	if c.Protocol == "" {
		return checks.Invalidf("protocol must be set")
	}
	if c.Dataset == "" {
		return checks.Invalidf("dataset must be set")
	}
	if c.Model == "" {
		return checks.Invalidf("model must be set")
	}
	if err := checks.IntAtLeast("clients", c.Clients, 1); err != nil {
		return err
	}
	if c.ClientsPerRound < 0 || c.ClientsPerRound > c.Clients {
		return checks.Invalidf("clients-per-round must be in [0, clients=%d], got %d", c.Clients, c.ClientsPerRound)
	}
	if err := checks.IntAtLeast("samples-per-client", c.SamplesPerClient, 0); err != nil {
		return err
	}
	// alpha is only used by the dirichlet partition, but a bad value is
	// an error whatever the partition (it is never silently ignored).
	if err := checks.Positive("alpha", c.Alpha); err != nil {
		return err
	}
	if err := c.validatePartition(); err != nil {
		return err
	}
	if err := c.validateData(); err != nil {
		return err
	}
	if err := checks.IntAtLeast("rounds", c.Rounds, 1); err != nil {
		return err
	}
	if c.LocalEpochs < 0 || c.LocalSteps < 0 || (c.LocalEpochs == 0 && c.LocalSteps == 0) {
		return checks.Invalidf("need local-epochs >= 1 or local-steps >= 1 (got %d and %d)", c.LocalEpochs, c.LocalSteps)
	}
	if c.LocalEpochs > 0 && c.LocalSteps > 0 {
		return checks.Invalidf("set only one of local-epochs (%d) and local-steps (%d)", c.LocalEpochs, c.LocalSteps)
	}
	if err := checks.IntAtLeast("batch", c.Batch, 1); err != nil {
		return err
	}
	if err := checks.Positive("lr", c.LR); err != nil {
		return err
	}
	if err := checks.Positive("server-lr", c.ServerLR); err != nil {
		return err
	}
	if err := checks.NonNegative("mu", c.Mu); err != nil {
		return err
	}
	switch c.Mode {
	case "fedavg", "fedsgd":
	default:
		return checks.Invalidf("unknown mode %q (known: fedavg, fedsgd)", c.Mode)
	}
	if err := checks.Positive("clip", c.Clip); err != nil {
		return err
	}
	if err := checks.Epsilon("epsilon", c.Epsilon); err != nil {
		return err
	}
	if err := checks.Delta("delta", c.Delta); err != nil {
		return err
	}
	if err := checks.NonNegative("client-cap", c.ClientCap); err != nil {
		return err
	}
	if c.EpsScale != 0 {
		if err := checks.Positive("eps-scale", c.EpsScale); err != nil {
			return err
		}
	}
	if c.TargetEpsilon != 0 {
		if err := checks.Epsilon("target-epsilon", c.TargetEpsilon); err != nil {
			return err
		}
	}
	if c.EpsDist != "" && c.EpsFile != "" {
		return checks.Invalidf("set only one of eps-dist and eps-file")
	}
	if c.Protocol == "nonprivate" && (c.EpsDist != "" || c.EpsFile != "" || c.TargetEpsilon != 0) {
		return checks.Invalidf("eps-dist, eps-file and target-epsilon have no effect with protocol nonprivate (it has no privacy budgets)")
	}
	for k, v := range c.Options {
		if err := checks.Finite("option "+k, v); err != nil {
			return err
		}
	}
	if err := checks.IntAtLeast("workers", c.Workers, 0); err != nil {
		return err
	}
	return c.validateEarlyStop()
}

// validateEarlyStop checks the held-out validation settings.
func (c *Config) validateEarlyStop() error {
	for _, v := range []struct {
		name string
		val  int
	}{{"holdout-clients", c.HoldoutClients}, {"validate-every", c.ValidateEvery}, {"patience", c.Patience}} {
		if err := checks.IntAtLeast(v.name, v.val, 0); err != nil {
			return err
		}
	}
	switch {
	case c.ValidateEvery > 0 && c.HoldoutClients == 0:
		return checks.Invalidf("validate-every %d needs validation clients (holdout-clients >= 1)", c.ValidateEvery)
	case c.HoldoutClients > 0 && c.ValidateEvery == 0:
		return checks.Invalidf("holdout-clients %d are never used without validate-every >= 1", c.HoldoutClients)
	case c.Patience > 0 && c.ValidateEvery == 0:
		return checks.Invalidf("patience %d needs validate-every >= 1", c.Patience)
	case c.ValidateEvery > c.Rounds:
		return checks.Invalidf("validate-every %d is more than the run's %d rounds: no validation would happen", c.ValidateEvery, c.Rounds)
	}
	return nil
}

// ParseOptions parses "k=v" protocol options.
func ParseOptions(kvs []string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, checks.Invalidf("option %q must have the form name=value", kv)
		}
		var f float64
		if _, err := fmt.Sscan(v, &f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, checks.Invalidf("option %s: value %q is not a finite number", k, v)
		}
		out[k] = f
	}
	return out, nil
}

// OptionString renders options deterministically as "k=v,k=v".
func OptionString(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%g", k, m[k])
	}
	return strings.Join(parts, ",")
}

// validatePartition checks the partition and its own settings.
func (c *Config) validatePartition() error {
	switch c.Partition {
	case "iid":
	case "dirichlet":
	case NaturalPartition: // checked by validateData
	case "sampled":
		if c.SamplesPerClient < 1 {
			return checks.Invalidf("partition sampled needs samples-per-client >= 1")
		}
	case "rotated":
		if err := checks.IntInRange("groups", c.Groups, 1, c.Clients); err != nil {
			return err
		}
	default:
		return checks.Invalidf("unknown partition %q (known: iid, dirichlet, natural, rotated, sampled)", c.Partition)
	}
	return nil
}
