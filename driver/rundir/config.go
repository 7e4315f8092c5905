package rundir

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
)

// runFile is the schema of a --config file: its keys are the flag names of
// `shufflefl run`. The settings of the simulation are round.Config's
// fields (inline); option, progress, overwrite, cpuprofile, trainer and
// trainer-timeout are the command's own (Settings). "options", the key of round.Config that
// config.yaml files written before version 0.3 hold, is still accepted.
type runFile struct {
	round.Config `yaml:",inline"`
	Option       optionList `yaml:"option"`
	Progress     string     `yaml:"progress"`
	Overwrite    bool       `yaml:"overwrite"`
	CPUProfile   string     `yaml:"cpuprofile"`
	Trainer      string     `yaml:"trainer"`
	// TrainerTimeout is a Go duration ("2m0s"), kept as text so that the
	// integer check of the other keys does not apply to it.
	TrainerTimeout string `yaml:"trainer-timeout"`
}

// optionList is the value of the option key: a mapping of name: value
// ("option: {k: 157, np: 333}") or a list of "name=value" strings, like the
// repeatable flag ("option: [k=157, np=333]").
type optionList []string

// UnmarshalYAML implements yaml.Unmarshaler.
func (o *optionList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		var m map[string]float64
		if err := n.Decode(&m); err != nil {
			return fmt.Errorf("option must map names to numbers: %w", err)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			*o = append(*o, fmt.Sprintf("%s=%v", k, m[k]))
		}
		return nil
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return fmt.Errorf("option must be a list of name=value strings: %w", err)
		}
		*o = append(*o, l...)
		return nil
	}
	return fmt.Errorf("line %d: option must be a mapping (option: {k: 157}) or a list (option: [k=157])", n.Line)
}

// Settings are the keys of a config file that steer the command rather than
// the simulation.
type Settings struct {
	Options    []string // protocol options, NAME=VALUE (the option key)
	Progress   string
	Overwrite  bool
	CPUProfile string
	Trainer    Trainer
}

// Trainer is a run's trainer program (`--trainer` and `--trainer-timeout`,
// docs/TRAINER.md): a setting of the command that config.yaml keeps, so
// that a rerun with --config and a resumed run train the same way. The
// zero value is the in-process trainer.
type Trainer struct {
	// Command is the program and its arguments, as --trainer takes them.
	Command string
	// Timeout is the handshake's and each request's deadline (0: the
	// command's default).
	Timeout time.Duration
}

// ReadConfig reads the YAML settings of path (a --config file or a run's
// config.yaml) into cfg and returns the command's own settings it holds
// and the set of keys the file gives (for the per-protocol defaults, which
// fill only the others). Unknown keys, keys without a value and non-integer
// values of integer settings are errors wrapping checks.ErrInvalid (yaml.v3
// would silently truncate "clients: 500.7").
func ReadConfig(path string, cfg *round.Config) (Settings, map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Settings{}, nil, checks.Invalidf("config file: %v", err)
	}
	keys, err := checkConfigNode(b)
	if err != nil {
		return Settings{}, nil, checks.Invalidf("config file %s: %v", path, err)
	}
	rf := runFile{Config: *cfg}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil && !errors.Is(err, io.EOF) {
		msg := strings.Join(strings.Fields(strings.TrimPrefix(err.Error(), "yaml: ")), " ") // one line
		msg = strings.ReplaceAll(msg, "in type rundir.runFile", "(keys are the flag names of shufflefl run)")
		return Settings{}, nil, checks.Invalidf("config file %s: %s", path, msg)
	}
	if len(rf.Option) > 0 && len(rf.Options) > 0 {
		return Settings{}, nil, checks.Invalidf("config file %s: set only one of option and options (the old name of option)", path)
	}
	var timeout time.Duration
	if rf.TrainerTimeout != "" {
		if timeout, err = time.ParseDuration(rf.TrainerTimeout); err != nil || timeout <= 0 {
			return Settings{}, nil, checks.Invalidf("config file %s: trainer-timeout must be a positive duration such as 2m0s, got %q", path, rf.TrainerTimeout)
		}
	}
	*cfg = rf.Config
	return Settings{Options: rf.Option, Progress: rf.Progress, Overwrite: rf.Overwrite, CPUProfile: rf.CPUProfile,
		Trainer: Trainer{Command: rf.Trainer, Timeout: timeout}}, keys, nil
}

// checkConfigNode checks the top level of a --config document: a mapping
// whose values are not empty and whose integer settings are integers. It
// returns the keys the document gives.
func checkConfigNode(b []byte) (map[string]bool, error) {
	keys := map[string]bool{}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return keys, nil // an empty file sets nothing
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: the file must be a mapping of flag names to values (e.g. \"rounds: 10\")", top.Line)
	}
	ints := intKeys(reflect.TypeFor[runFile]())
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if k.Value == "config" {
			return nil, fmt.Errorf("line %d: config: a config file cannot name another (--config is a command-line flag)", k.Line)
		}
		if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
			return nil, fmt.Errorf("line %d: %s has no value", k.Line, k.Value)
		}
		if ints[k.Value] && (v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int") {
			return nil, fmt.Errorf("line %d: %s must be an integer, got %q", v.Line, k.Value, v.Value)
		}
		keys[k.Value] = true
	}
	return keys, nil
}

// intKeys returns the YAML keys of t's integer fields, inline structs
// included.
func intKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.Type.Kind() == reflect.Struct && strings.Contains(opts, "inline") {
			for k := range intKeys(f.Type) {
				keys[k] = true
			}
			continue
		}
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if name != "" && name != "-" {
				keys[name] = true
			}
		}
	}
	return keys
}

// WriteConfig writes cfg.Out/config.yaml: the resolved settings under
// the flag names, headed by a comment giving version (the shufflefl
// version and git commit). The out key is left out, so that `shufflefl run --config
// config.yaml` reruns the experiment without writing over its outputs, and
// the protocol options are under option, the flag's name. Every key is
// written, option too when empty ("option: {}"), so that no per-protocol
// default changes a rerun. A trainer program, if tr names one, is written
// under trainer and trainer-timeout.
func WriteConfig(cfg round.Config, version string, tr Trainer) error {
	var n yaml.Node
	if err := n.Encode(cfg); err != nil {
		return fmt.Errorf("config.yaml: %w", err)
	}
	m := &n
	if m.Kind == yaml.DocumentNode && len(m.Content) > 0 {
		m = m.Content[0]
	}
	var kept []*yaml.Node
	hasOption := false
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		switch k.Value {
		case "out":
			continue
		case "options":
			k.Value = "option"
			hasOption = true
		}
		kept = append(kept, k, m.Content[i+1])
	}
	if !hasOption {
		kept = append(kept,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "option"},
			&yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle})
	}
	if tr.Command != "" {
		str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
		kept = append(kept, str("trainer"), str(tr.Command))
		if tr.Timeout > 0 {
			kept = append(kept, str("trainer-timeout"), str(tr.Timeout.String()))
		}
	}
	m.Content = kept
	body, err := yaml.Marshal(&n)
	if err != nil {
		return fmt.Errorf("config.yaml: %w", err)
	}
	header := fmt.Sprintf("# Resolved settings of a shufflefl run, written by %s.\n"+
		"# Rerun with: shufflefl run --config config.yaml --out NEW-DIRECTORY\n", version)
	if err := os.WriteFile(filepath.Join(cfg.Out, "config.yaml"), append([]byte(header), body...), 0o644); err != nil {
		return fmt.Errorf("writing config.yaml: %w", err)
	}
	return nil
}
