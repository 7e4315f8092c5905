package longtest

import "testing"

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		val  string
		want bool
	}{{"", false}, {"0", false}, {"false", false}, {"1", true}, {"yes", true}} {
		t.Setenv(Env, tc.val)
		if got := Enabled(); got != tc.want && !testing.Short() {
			t.Errorf("%s=%q: Enabled() = %v, want %v", Env, tc.val, got, tc.want)
		}
	}
}
