package trainer

import (
	"fmt"
	"strings"
)

// ParseCommand splits a command line into its program and arguments as a
// POSIX shell would split words: blanks separate words, single quotes keep
// everything literally, double quotes keep everything but \" and \\, and a
// backslash outside quotes escapes the next character. There is no
// expansion of variables, globs or ~. An empty command or an unterminated
// quote is an error.
func ParseCommand(s string) ([]string, error) {
	var (
		args  []string
		cur   strings.Builder
		inArg bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("trainer command %q: unterminated single quote", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inArg = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("trainer command %q: unterminated double quote", s)
			}
			inArg = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("trainer command %q: ends with a backslash", s)
			}
			i++
			cur.WriteByte(s[i])
			inArg = true
		default:
			cur.WriteByte(c)
			inArg = true
		}
	}
	if inArg {
		args = append(args, cur.String())
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("trainer command %q is empty", s)
	}
	return args, nil
}
