package round

import (
	"flag"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestRegisterFlags: every field with a YAML key has the flag of that name
// (config files and flags share their names), defaults are the current
// values, and parsing sets the field.
func TestRegisterFlags(t *testing.T) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.RegisterFlags(fs)
	typ := reflect.TypeOf(c)
	for i := 0; i < typ.NumField(); i++ {
		key, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
		if key == "" || key == "-" || key == "option" || key == "options" {
			continue
		}
		if fs.Lookup(key) == nil {
			t.Errorf("field %s (yaml %q) has no flag", typ.Field(i).Name, key)
		}
	}
	if got, want := fs.Lookup("rounds").DefValue, strconv.Itoa(c.Rounds); got != want {
		t.Errorf("--rounds default %q, want %q", got, want)
	}
	if err := fs.Parse([]string{"--rounds", "7", "--protocol", "apes", "--secure-noise"}); err != nil {
		t.Fatal(err)
	}
	if c.Rounds != 7 || c.Protocol != "apes" || !c.SecureNoise {
		t.Errorf("parsed: rounds %d, protocol %q, secure-noise %v", c.Rounds, c.Protocol, c.SecureNoise)
	}
}

// TestProtocolsWrapText: descriptions are word-wrapped with their prefixes.
func TestProtocolsWrapText(t *testing.T) {
	tests := []struct {
		s, first, rest string
		width          int
		want           string
	}{
		{"", "  x: ", "     ", 20, "  x: \n"},
		{"one two three", "", "", 80, "one two three\n"},
		{"one two three four", "> ", "  ", 10, "> one two\n  three\n  four\n"},
		{"averyveryverylongword b", "> ", "  ", 8, "> averyveryverylongword\n  b\n"},
	}
	for _, tt := range tests {
		if got := wrapText(tt.s, tt.first, tt.rest, tt.width); got != tt.want {
			t.Errorf("wrapText(%q, %q, %q, %d) = %q, want %q", tt.s, tt.first, tt.rest, tt.width, got, tt.want)
		}
	}
}
