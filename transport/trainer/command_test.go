package trainer

import (
	"slices"
	"testing"
)

func TestParseCommand(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"/usr/bin/python3 examples/pytorch/trainer.py", []string{"/usr/bin/python3", "examples/pytorch/trainer.py"}},
		{"  a\tb  ", []string{"a", "b"}},
		{`python3 'my dir/t.py' "--name=x y" a\ b`, []string{"python3", "my dir/t.py", "--name=x y", "a b"}},
		{`p "a \"q\" \\ \n"`, []string{"p", `a "q" \ \n`}},
		{`p ''`, []string{"p", ""}},
	} {
		got, err := ParseCommand(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseCommand(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "   ", "p 'a", `p "a`, `p \`} {
		if got, err := ParseCommand(bad); err == nil {
			t.Errorf("ParseCommand(%q) = %q, want an error", bad, got)
		}
	}
}
