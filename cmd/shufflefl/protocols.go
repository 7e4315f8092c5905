package main

import (
	"fmt"
	"io"
	"strings"

	"shufflefl/bound"
	"shufflefl/protocol"
	"shufflefl/runtime"
)

const protocolsUsage = `Usage: shufflefl protocols [NAME]

Without NAME, lists the protocols of 'shufflefl run --protocol NAME': what
each does, the paper it implements, the privacy budgets it takes and the
names of its options. With NAME, describes that protocol and every option it
accepts: meaning, default and valid values.

Options are given to run as --option NAME=VALUE (repeatable), or in a
--config file as "option: {NAME: VALUE}"; a protocol rejects any option it
does not list. 'shufflefl run --protocol NAME --help' appends the same
options to the flags of run. Output goes to stdout.

Exit status: 0 success, 2 unknown protocol or bad arguments.

Examples:
  shufflefl protocols
  shufflefl protocols ss-topk
`

// protocolsWidth is the width the descriptions are wrapped to.
const protocolsWidth = 80

// runProtocols implements `shufflefl protocols [NAME]`.
func runProtocols(args []string, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "shufflefl protocols: %s\n", strings.ReplaceAll(fmt.Sprintf(format, a...), "\n", "; "))
		return 2
	}
	for _, a := range args {
		switch {
		case a == "-h" || a == "-help" || a == "--help":
			fmt.Fprint(stdout, protocolsUsage)
			return 0
		case strings.HasPrefix(a, "-"):
			return fail("flag provided but not defined: %s (see shufflefl protocols --help)", a)
		}
	}
	switch len(args) {
	case 0:
		writeProtocolList(stdout)
		return 0
	case 1:
		info, err := protocol.Describe(args[0])
		if err != nil {
			return fail("%s", oneLine(err))
		}
		writeProtocol(stdout, info)
		return 0
	default:
		return fail("expected at most one protocol name, got %d: %s (see shufflefl protocols --help)", len(args), strings.Join(args, " "))
	}
}

// writeProtocolList writes every protocol's name, summary, paper, budgets
// and option names.
func writeProtocolList(w io.Writer) {
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
		fmt.Fprint(w, wrapText(info.Summary, "    ", "    ", protocolsWidth))
		fmt.Fprint(w, wrapText(info.Paper, "    paper:   ", "             ", protocolsWidth))
		fmt.Fprint(w, wrapText(info.Budgets, "    budgets: ", "             ", protocolsWidth))
		fmt.Fprint(w, wrapText(opts, "    options: ", "             ", protocolsWidth))
	}
}

// writeProtocol writes one protocol's description, budgets and options
// (`shufflefl protocols NAME`).
func writeProtocol(w io.Writer, info protocol.Info) {
	// The registry's summary is the longer description.
	desc := protocol.Summary(info.Name)
	if desc == "" {
		desc = info.Summary
	}
	fmt.Fprintf(w, "%s\n", info.Name)
	fmt.Fprint(w, wrapText(desc, "    ", "    ", protocolsWidth))
	fmt.Fprintln(w)
	fmt.Fprint(w, wrapText(info.Paper, "Paper:   ", "         ", protocolsWidth))
	writeRunDefaults(w, info.Name)
	writeProtocolOptions(w, info)
}

// writeRunDefaults writes the settings 'shufflefl run --protocol NAME' uses
// when they are not given (runtime.DefaultsFor) and where they come from.
func writeRunDefaults(w io.Writer, name string) {
	d, ok := runtime.DefaultsFor(name)
	if !ok || len(d.Settings) == 0 {
		c := runtime.DefaultConfig()
		base := fmt.Sprintf("--clients %d --rounds %d --local-epochs %d --lr %s --clip %s (the engine's base settings: this protocol has no defaults of its own)",
			c.Clients, c.Rounds, c.LocalEpochs, bound.Figure(c.LR, -1), bound.Figure(c.Clip, -1))
		fmt.Fprint(w, wrapText(base, "Run defaults: ", "    ", protocolsWidth))
		if ok && d.Why != "" {
			fmt.Fprint(w, wrapText(d.Why, "    ", "    ", protocolsWidth))
		}
		return
	}
	def := ""
	if name == runtime.DefaultProtocol {
		def = " (the protocol of 'shufflefl run' without --protocol)"
	}
	fmt.Fprintf(w, "Run defaults%s, for the settings not given:\n", def)
	fmt.Fprint(w, wrapText(d.String(), "    ", "    ", protocolsWidth))
	for _, s := range d.Settings {
		if len(s.Unless) > 0 {
			unless := make([]string, len(s.Unless))
			for i, k := range s.Unless {
				unless[i] = runtime.FlagName(k)
			}
			fmt.Fprint(w, wrapText(fmt.Sprintf("(%s only when none of %s is given)", s.Flag(), strings.Join(unless, ", ")), "    ", "     ", protocolsWidth))
		}
	}
	fmt.Fprint(w, wrapText(d.Why, "    why: ", "         ", protocolsWidth))
}

// runDefaultOption returns the value 'shufflefl run' gives option opt of
// protocol name when it is not given, if the defaults table sets it.
func runDefaultOption(name, opt string) (float64, bool) {
	d, ok := runtime.DefaultsFor(name)
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

// writeProtocolOptions writes a protocol's budgets and its options table:
// every option's name, meaning, default and valid values.
func writeProtocolOptions(w io.Writer, info protocol.Info) {
	fmt.Fprint(w, wrapText(info.Budgets, "Budgets: ", "         ", protocolsWidth))
	if len(info.Options) == 0 {
		fmt.Fprintf(w, "\nOptions: none (%s rejects every --option)\n", info.Name)
		return
	}
	fmt.Fprintf(w, "\nOptions of %s (--option NAME=VALUE, repeatable):\n", info.Name)
	for _, o := range info.Options {
		fmt.Fprintf(w, "  %s\n", o.Name)
		fmt.Fprint(w, wrapText(o.Meaning, "      ", "      ", protocolsWidth))
		def := o.Default
		if v, ok := runDefaultOption(info.Name, o.Name); ok {
			def = fmt.Sprintf("%s in shufflefl run, experiment and bound (the run default above); %s for the protocol package used directly", bound.Figure(v, -1), o.Default)
		}
		fmt.Fprint(w, wrapText(def, "      default: ", "               ", protocolsWidth))
		fmt.Fprint(w, wrapText(o.Range, "      valid:   ", "               ", protocolsWidth))
	}
}

// writeRunProtocolHelp is the part of 'shufflefl run --help' after the
// flags: with --protocol P given before --help, P's budgets and options;
// otherwise where to find them.
func writeRunProtocolHelp(w io.Writer, protocolGiven bool, name string) {
	if !protocolGiven {
		fmt.Fprint(w, "\nProtocol options (--option NAME=VALUE) are listed by 'shufflefl protocols NAME'\nand 'shufflefl run --protocol NAME --help'; 'shufflefl protocols' lists the\nprotocols.\n")
		return
	}
	info, err := protocol.Describe(name)
	if err != nil {
		fmt.Fprintf(w, "\nProtocol %q: no such protocol (known: %s)\n", name, protocolList())
		return
	}
	fmt.Fprintf(w, "\nProtocol %s: %s\n", info.Name, info.Summary)
	fmt.Fprint(w, wrapText(info.Paper, "Paper:   ", "         ", protocolsWidth))
	writeRunDefaults(w, info.Name)
	writeProtocolOptions(w, info)
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
