package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// printFlags writes the flags of fs to w like flag.PrintDefaults, but with
// GNU-style names (--flag), as the rest of the documentation writes them:
//
//	--name TYPE
//	      usage (default value)
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) { printFlag(w, f) })
}

// flagGroup is a heading of a command's help and the flags under it.
type flagGroup struct {
	title string
	names []string
}

// printFlagGroups writes the flags of fs under the groups' headings, in
// the groups' order; flags in no group follow under "Other".
func printFlagGroups(w io.Writer, fs *flag.FlagSet, groups []flagGroup) {
	seen := map[string]bool{}
	for i, g := range groups {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s:\n", g.title)
		for _, n := range g.names {
			if f := fs.Lookup(n); f != nil {
				printFlag(w, f)
				seen[n] = true
			}
		}
	}
	other := false
	fs.VisitAll(func(f *flag.Flag) {
		if seen[f.Name] {
			return
		}
		if !other {
			fmt.Fprintln(w, "\nOther:")
			other = true
		}
		printFlag(w, f)
	})
}

// printFlag writes one flag as printFlags does.
func printFlag(w io.Writer, f *flag.Flag) {
	{
		typ, usage := flag.UnquoteUsage(f)
		var b strings.Builder
		fmt.Fprintf(&b, "  --%s", f.Name)
		if typ != "" {
			b.WriteString(" " + typ)
		}
		b.WriteString("\n      ")
		b.WriteString(strings.ReplaceAll(usage, "\n", "\n      "))
		if !isZeroDefault(f) {
			if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
				fmt.Fprintf(&b, " (default %q)", f.DefValue)
			} else {
				fmt.Fprintf(&b, " (default %s)", f.DefValue)
			}
		}
		fmt.Fprintln(w, b.String())
	}
}

// isZeroDefault reports whether a flag's default is its type's zero value,
// which flag.PrintDefaults does not print either.
func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "[]":
		return true
	}
	return false
}

// flagError renders an error of the flag package with GNU-style flag names
// (the package writes "-name").
func flagError(err error) string {
	s := err.Error()
	for _, p := range []string{"flag provided but not defined: -", "for flag -", "flag needs an argument: -"} {
		s = strings.Replace(s, p, p+"-", 1)
	}
	return s
}

// flagSet reports which flags of fs were given on the command line.
func flagSet(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// oneLine renders an error on one line: errors joined by errors.Join (the
// training and test files of a dataset, say) are separated by "; ".
func oneLine(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}
