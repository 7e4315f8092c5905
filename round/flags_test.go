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
