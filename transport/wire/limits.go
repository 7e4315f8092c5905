package wire

import (
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/shufflefl/shufflefl/checks"
)

// Limits enforced by Validate. They are sized for the deployments of issue
// 9: per-coordinate reports of d = 101,770 with k up to 16 models fit, and
// every message fits DefaultMaxMessageBytes.
const (
	MaxIDBytes           = 256     // client IDs, run IDs
	MaxNameBytes         = 64      // protocol, parameter, model, suite, algorithm and reason names
	MaxTextBytes         = 1024    // a text parameter
	MaxMessageTextBytes  = 4096    // ErrorDetail.message
	MinNonceBytes        = 16      // RequestAuth.nonce
	MaxNonceBytes        = 64      //
	MaxSignatureBytes    = 8192    // room for post-quantum signatures
	MaxPublicKeyBytes    = 4096    // registered keys and the analyzer's HPKE key
	MaxParams            = 64      // parameters per round
	MaxModels            = 64      // k, models per round
	MaxDimension         = 1 << 24 // d per model
	MaxModelBytes        = 48 << 20
	MaxCiphertextBytes   = 16 << 20 // one sealed message (a whole-report protocol seals d values)
	MaxMessagesPerReport = 1 << 21
	MaxReportBytes       = 48 << 20 // sum of a report's ciphertexts
	MaxMessagesPerChunk  = 1 << 20
	MaxBatchMessages     = 1 << 32 // a round's shuffled batch
	MaxChunkBytes        = 48 << 20
	MaxRejectReasons     = 32
	MaxShards            = 256                  // shuffler shards of one round
	MaxTTLMillis         = 7 * 24 * 3600 * 1000 // a week
	MaxIntervalMillis    = 3600 * 1000          // heartbeat and retry hints
)

// ErrTooLarge is wrapped (besides checks.ErrInvalid) by the Validate errors
// of values over a size or count limit, so servers can answer with
// REASON_TOO_LARGE.
var ErrTooLarge = errors.New("over the size limit")

// FieldError is the error of a Validate method: the dotted path of the
// offending field (e.g. "auth.nonce", "models[2].weights") and the cause,
// which wraps checks.ErrInvalid and, for size violations, ErrTooLarge.
type FieldError struct {
	Message string // the proto message type, e.g. "SubmitReportRequest"
	Field   string
	Err     error
}

// Error formats the message type, the field and the cause.
func (e *FieldError) Error() string {
	return fmt.Sprintf("wire: %s.%s: %v", e.Message, e.Field, e.Err)
}

// Unwrap returns the cause.
func (e *FieldError) Unwrap() error { return e.Err }

// Reason returns REASON_TOO_LARGE for size violations and REASON_MALFORMED
// otherwise.
func (e *FieldError) Reason() Reason {
	if errors.Is(e.Err, ErrTooLarge) {
		return Reason_REASON_TOO_LARGE
	}
	return Reason_REASON_MALFORMED
}

// v accumulates the first error of a validation.
type v struct {
	msg string
	err error
}

func (c *v) fail(field string, err error) {
	if c.err == nil {
		c.err = &FieldError{Message: c.msg, Field: field, Err: err}
	}
}

func (c *v) bad(field, format string, a ...any) {
	c.fail(field, checks.Invalidf(format, a...))
}

func (c *v) tooLarge(field, format string, a ...any) {
	c.fail(field, fmt.Errorf("%w (%w)", checks.Invalidf(format, a...), ErrTooLarge))
}

// nested records the error of a nested message's validation under prefix.
func (c *v) nested(prefix string, err error) {
	if err == nil || c.err != nil {
		return
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		c.err = &FieldError{Message: c.msg, Field: prefix + "." + fe.Field, Err: fe.Err}
		return
	}
	c.fail(prefix, err)
}

// printable checks a required identifier: 1..max bytes of printable ASCII
// without spaces.
func (c *v) printable(field, s string, max int) {
	if s == "" {
		c.bad(field, "must not be empty")
		return
	}
	c.optPrintable(field, s, max)
}

// optPrintable is printable for an optional identifier.
func (c *v) optPrintable(field, s string, max int) {
	if len(s) > max {
		c.tooLarge(field, "length %d exceeds %d bytes", len(s), max)
		return
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			c.bad(field, "byte %d is %#x, want printable ASCII without spaces", i, s[i])
			return
		}
	}
}

func (c *v) text(field, s string, max int) {
	if len(s) > max {
		c.tooLarge(field, "length %d exceeds %d bytes", len(s), max)
	} else if !utf8.ValidString(s) {
		c.bad(field, "is not valid UTF-8")
	}
}

func (c *v) bytesIn(field string, b []byte, min, max int) {
	switch {
	case len(b) > max:
		c.tooLarge(field, "length %d exceeds %d bytes", len(b), max)
	case len(b) < min:
		c.bad(field, "length %d is below %d bytes", len(b), min)
	}
}

func (c *v) atLeast(field string, x, min int64) {
	if x < min {
		c.bad(field, "must be >= %d, got %d", min, x)
	}
}

func (c *v) intIn(field string, x, min, max int64) {
	switch {
	case x > max:
		c.tooLarge(field, "must be <= %d, got %d", max, x)
	case x < min:
		c.bad(field, "must be >= %d, got %d", min, x)
	}
}

func (c *v) required(field string, present bool) bool {
	if !present {
		c.bad(field, "is required")
	}
	return present
}

// Validate checks the authentication fields' shape (not the signature).
func (x *RequestAuth) Validate() error {
	c := &v{msg: "RequestAuth"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	c.printable("client_id", x.ClientId, MaxIDBytes)
	c.atLeast("timestamp_unix_nano", x.TimestampUnixNano, 1)
	c.bytesIn("nonce", x.Nonce, MinNonceBytes, MaxNonceBytes)
	c.bytesIn("signature", x.Signature, 1, MaxSignatureBytes)
	return c.err
}

// Validate checks the name and that a finite value is set.
func (x *Param) Validate() error {
	c := &v{msg: "Param"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	c.printable("name", x.Name, MaxNameBytes)
	switch val := x.Value.(type) {
	case nil:
		c.bad("value", "is required")
	case *Param_Number:
		if err := checks.Finite("number", val.Number); err != nil {
			c.fail("number", err)
		}
	case *Param_Text:
		c.text("text", val.Text, MaxTextBytes)
	}
	return c.err
}

// Validate checks the dimension, that weights holds exactly dimension
// float64s and that all of them are finite.
func (x *Model) Validate() error {
	c := &v{msg: "Model"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	c.optPrintable("name", x.Name, MaxNameBytes)
	c.intIn("dimension", int64(x.Dimension), 1, MaxDimension)
	if c.err == nil {
		if want := 8 * int(x.Dimension); len(x.Weights) != want {
			c.bad("weights", "length %d, want 8*dimension = %d", len(x.Weights), want)
		} else if i := firstNonFinite(x.Weights); i >= 0 {
			c.bad("weights", "value %d is not finite", i)
		}
	}
	return c.err
}

// Validate checks every field of the announcement, its parameters (unique
// names) and its models (unique names, total size).
func (x *RoundAnnouncement) Validate() error {
	c := &v{msg: "RoundAnnouncement"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	c.atLeast("round", x.Round, 0)
	c.printable("run_id", x.RunId, MaxIDBytes)
	c.printable("protocol", x.Protocol, MaxNameBytes)
	c.intIn("params", int64(len(x.Params)), 0, MaxParams)
	names := map[string]bool{}
	for i, p := range x.Params {
		c.nested(fmt.Sprintf("params[%d]", i), p.Validate())
		if c.err == nil && names[p.Name] {
			c.bad(fmt.Sprintf("params[%d].name", i), "duplicate parameter %q", p.Name)
		}
		names[p.GetName()] = true
	}
	c.intIn("models", int64(len(x.Models)), 1, MaxModels)
	total := 0
	models := map[string]bool{}
	for i, m := range x.Models {
		if m != nil {
			total += len(m.Weights)
		}
		if total > MaxModelBytes {
			c.tooLarge("models", "weights exceed %d bytes in total", MaxModelBytes)
			break
		}
		c.nested(fmt.Sprintf("models[%d]", i), m.Validate())
		if c.err == nil && models[m.Name] {
			c.bad(fmt.Sprintf("models[%d].name", i), "duplicate model name %q", m.Name)
		}
		models[m.GetName()] = true
	}
	c.atLeast("deadline_unix_nano", x.DeadlineUnixNano, 1)
	c.intIn("ttl_millis", x.TtlMillis, 1, MaxTTLMillis)
	c.atLeast("min_reports", int64(x.MinReports), 1)
	if err := checks.Finite("sampling_rate", x.SamplingRate); err != nil {
		c.fail("sampling_rate", err)
	} else if x.SamplingRate <= 0 || x.SamplingRate > 1 {
		c.bad("sampling_rate", "must be in (0, 1], got %v", x.SamplingRate)
	}
	c.bytesIn("analyzer_public_key", x.AnalyzerPublicKey, 1, MaxPublicKeyBytes)
	c.printable("hpke_suite", x.HpkeSuite, MaxNameBytes)
	return c.err
}

// Validate checks the ciphertext length.
func (x *SealedMessage) Validate() error {
	c := &v{msg: "SealedMessage"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	c.bytesIn("ciphertext", x.Ciphertext, 1, MaxCiphertextBytes)
	return c.err
}

// validateMessages checks a list of sealed messages: count and total size.
func (c *v) messages(field string, ms []*SealedMessage, min, maxCount, maxBytes int) {
	c.intIn(field, int64(len(ms)), int64(min), int64(maxCount))
	total := 0
	for i, m := range ms {
		if c.err != nil {
			return
		}
		if m == nil || len(m.Ciphertext) == 0 || len(m.Ciphertext) > MaxCiphertextBytes {
			// The slow path names the field; the fast path allocates nothing.
			c.nested(fmt.Sprintf("%s[%d]", field, i), m.Validate())
		}
		total += len(m.GetCiphertext())
		if total > maxBytes {
			c.tooLarge(field, "ciphertexts exceed %d bytes in total", maxBytes)
		}
	}
}

// Validate checks the reason and the text lengths.
func (x *ErrorDetail) Validate() error {
	c := &v{msg: "ErrorDetail"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	if _, ok := Reason_name[int32(x.Reason)]; !ok {
		c.bad("reason", "unknown reason %d", x.Reason)
	}
	c.text("field", x.Field, MaxIDBytes)
	c.text("message", x.Message, MaxMessageTextBytes)
	c.atLeast("round", x.Round, -1)
	return c.err
}

// Validate checks the request's fields.
func (x *RegisterRequest) Validate() error {
	c := &v{msg: "RegisterRequest"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	if c.required("auth", x.Auth != nil) {
		c.nested("auth", x.Auth.Validate())
	}
	c.bytesIn("public_key", x.PublicKey, 1, MaxPublicKeyBytes)
	c.printable("key_algorithm", x.KeyAlgorithm, MaxNameBytes)
	// The client's own budget: 0 for the run's uniform budget, else a
	// finite epsilon > 0 (checks.Epsilon) and delta in [0, 1); a delta
	// without an epsilon names no budget.
	if x.Epsilon != 0 {
		if err := checks.Epsilon("epsilon", x.Epsilon); err != nil {
			c.fail("epsilon", err)
		}
	}
	if err := checks.DeltaOrZero("delta", x.Delta); err != nil {
		c.fail("delta", err)
	} else if x.Delta != 0 && x.Epsilon == 0 {
		c.bad("delta", "a delta of %v without an epsilon", x.Delta)
	}
	return c.err
}

// Validate checks the response's fields.
func (x *RegisterResponse) Validate() error {
	c := &v{msg: "RegisterResponse"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	c.printable("client_id", x.ClientId, MaxIDBytes)
	c.intIn("heartbeat_interval_millis", x.HeartbeatIntervalMillis, 1, MaxIntervalMillis)
	return c.err
}

// Validate checks the request's fields.
func (x *HeartbeatRequest) Validate() error {
	c := &v{msg: "HeartbeatRequest"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	if c.required("auth", x.Auth != nil) {
		c.nested("auth", x.Auth.Validate())
	}
	return c.err
}

// Validate checks the response's fields.
func (x *HeartbeatResponse) Validate() error {
	c := &v{msg: "HeartbeatResponse"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	c.intIn("heartbeat_interval_millis", x.HeartbeatIntervalMillis, 1, MaxIntervalMillis)
	c.atLeast("current_round", x.CurrentRound, -1)
	return c.err
}

// Validate checks the request's fields.
func (x *PullTaskRequest) Validate() error {
	c := &v{msg: "PullTaskRequest"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	if c.required("auth", x.Auth != nil) {
		c.nested("auth", x.Auth.Validate())
	}
	c.atLeast("after_round", x.AfterRound, -1)
	return c.err
}

// Validate checks the response's fields (the task, if present, fully).
func (x *PullTaskResponse) Validate() error {
	c := &v{msg: "PullTaskResponse"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	if x.Task != nil {
		c.nested("task", x.Task.Validate())
	}
	c.intIn("retry_after_millis", x.RetryAfterMillis, 0, MaxIntervalMillis)
	return c.err
}

// Validate checks the request's fields and every sealed message.
func (x *SubmitReportRequest) Validate() error {
	c := &v{msg: "SubmitReportRequest"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	if c.required("auth", x.Auth != nil) {
		c.nested("auth", x.Auth.Validate())
	}
	c.atLeast("round", x.Round, 0)
	c.messages("messages", x.Messages, 1, MaxMessagesPerReport, MaxReportBytes)
	return c.err
}

// Validate checks the response's fields.
func (x *SubmitReportResponse) Validate() error {
	c := &v{msg: "SubmitReportResponse"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	c.atLeast("round", x.Round, 0)
	c.intIn("stored_messages", int64(x.StoredMessages), 0, MaxMessagesPerReport)
	return c.err
}

// Validate checks the announcement.
func (x *AnnounceRequest) Validate() error {
	c := &v{msg: "AnnounceRequest"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	if c.required("announcement", x.Announcement != nil) {
		c.nested("announcement", x.Announcement.Validate())
	}
	return c.err
}

// Validate checks the response's fields.
func (x *AnnounceResponse) Validate() error {
	c := &v{msg: "AnnounceResponse"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	c.atLeast("round", x.Round, 0)
	return c.err
}

// rejected checks a reject-count map's size and keys.
func (c *v) rejected(field string, keys []string) {
	if len(keys) > MaxRejectReasons {
		c.tooLarge(field, "%d reasons exceed %d", len(keys), MaxRejectReasons)
		return
	}
	sort.Strings(keys)
	for _, k := range keys {
		c.printable(field+"["+fmt.Sprintf("%q", k)+"]", k, MaxNameBytes)
	}
}

// Validate checks that the counts are consistent: dummies and reports do
// not exceed messages, and the sample (population, sampled) is either
// absent or holds the reporters.
func (x *BatchCounts) Validate() error { return x.validate(false) }

// validate is Validate; part (the counts of a sharded round's manifest or
// part) skips the reports' bound by the messages, which count only the
// part while reports are the round's (the analyzer checks the bound on the
// assembled round).
func (x *BatchCounts) validate(part bool) error {
	c := &v{msg: "BatchCounts"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	if x.Messages > MaxBatchMessages {
		c.tooLarge("messages", "%d exceeds %d", x.Messages, uint64(MaxBatchMessages))
	}
	if x.Dummies > x.Messages {
		c.bad("dummies", "%d exceed messages %d", x.Dummies, x.Messages)
	}
	if !part && uint64(x.Reports) > x.Messages-x.Dummies && c.err == nil {
		c.bad("reports", "%d exceed the %d non-dummy messages", x.Reports, x.Messages-x.Dummies)
	}
	// The round's sample: both 0 (every registered client was offered the
	// round), or 1 <= sampled <= population; the reports come from the
	// sampled clients.
	switch {
	case x.Sampled > x.Population:
		c.bad("sampled", "%d exceed the population %d", x.Sampled, x.Population)
	case x.Population > 0 && x.Sampled == 0:
		c.bad("sampled", "0 of a population of %d (both 0 when no sample was drawn)", x.Population)
	case x.Sampled > 0 && x.Reports > x.Sampled:
		c.bad("reports", "%d exceed the %d sampled clients", x.Reports, x.Sampled)
	}
	keys := make([]string, 0, len(x.Rejected))
	for k := range x.Rejected {
		keys = append(keys, k)
	}
	c.rejected("rejected", keys)
	return c.err
}

// Validate checks the header's fields and counts, and the reporters'
// budgets against them.
func (x *BatchHeader) Validate() error {
	c := &v{msg: "BatchHeader"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	c.atLeast("round", x.Round, 0)
	c.printable("run_id", x.RunId, MaxIDBytes)
	if c.required("counts", x.Counts != nil) {
		c.nested("counts", x.Counts.validate(x.Shards > 0))
	}
	c.intIn("shards", int64(x.Shards), 0, MaxShards)
	switch {
	case x.Shards == 0 && x.Shard != 0:
		c.bad("shard", "shard %d of a batch that is not sharded (shards 0)", x.Shard)
	case x.Shard > x.Shards:
		c.bad("shard", "shard %d of %d shards", x.Shard, x.Shards)
	case x.Shards > 0 && x.Shard == 0 && x.Counts != nil && (x.Counts.Messages != 0 || x.Counts.Dummies != 0):
		c.bad("counts", "a sharded round's manifest (shard 0) carries no messages, not %d (%d dummies)", x.Counts.Messages, x.Counts.Dummies)
	}
	if c.err != nil {
		return c.err
	}
	// The reporters' registered budgets: empty, or one per report; each
	// list sorted ascending (unlinked from each other and from the
	// reports); deltas empty or as many as the epsilons.
	eps, del := x.ReporterEpsilons, x.ReporterDeltas
	if len(eps) != 0 && len(eps) != int(x.Counts.Reports) {
		c.bad("reporter_epsilons", "%d entries for %d reports (want none or one per report)", len(eps), x.Counts.Reports)
	}
	if len(del) != 0 && len(del) != len(eps) {
		c.bad("reporter_deltas", "%d entries for %d epsilons (want none or one per epsilon)", len(del), len(eps))
	}
	for i, e := range eps {
		field := fmt.Sprintf("reporter_epsilons[%d]", i)
		if err := checks.Epsilon(field, e); err != nil {
			c.fail(field, err)
		} else if i > 0 && e < eps[i-1] {
			c.bad(field, "%v after %v: not sorted ascending", e, eps[i-1])
		}
	}
	for i, d := range del {
		field := fmt.Sprintf("reporter_deltas[%d]", i)
		if err := checks.DeltaOrZero(field, d); err != nil {
			c.fail(field, err)
		} else if i > 0 && d < del[i-1] {
			c.bad(field, "%v after %v: not sorted ascending", d, del[i-1])
		}
	}
	return c.err
}

// Validate checks one chunk on its own (BatchAssembler checks the stream).
func (x *BatchChunk) Validate() error {
	c := &v{msg: "BatchChunk"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	if x.Header != nil {
		c.nested("header", x.Header.Validate())
	} else if len(x.Messages) == 0 {
		c.bad("messages", "a chunk without a header must carry messages")
	}
	c.messages("messages", x.Messages, 0, MaxMessagesPerChunk, MaxChunkBytes)
	return c.err
}

// Validate checks the response's fields.
func (x *BatchResponse) Validate() error {
	c := &v{msg: "BatchResponse"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	c.atLeast("round", x.Round, 0)
	keys := make([]string, 0, len(x.Rejected))
	for k := range x.Rejected {
		keys = append(keys, k)
	}
	c.rejected("rejected", keys)
	return c.err
}

// firstNonFinite returns the index of the first NaN or infinite float64 in
// packed little-endian b, or -1.
func firstNonFinite(b []byte) int {
	for i := 0; i+8 <= len(b); i += 8 {
		// The exponent bits all set means Inf or NaN.
		if (uint16(b[i+7])<<8|uint16(b[i+6]))&0x7ff0 == 0x7ff0 {
			return i / 8
		}
	}
	return -1
}

// Validate checks a shard queue envelope: exactly one body, valid.
func (x *ShardEnvelope) Validate() error {
	c := &v{msg: "ShardEnvelope"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	switch {
	case x.GetChunk() != nil:
		c.nested("chunk", x.GetChunk().Validate())
	case x.GetClose() != nil:
		c.nested("close", x.GetClose().Validate())
	default:
		c.bad("body", "neither a chunk nor a close")
	}
	return c.err
}

// Validate checks one chunk of a shard's part.
func (x *ShardChunk) Validate() error {
	c := &v{msg: "ShardChunk"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	c.atLeast("round", x.Round, 1)
	c.intIn("shard", int64(x.Shard), 1, MaxShards)
	if len(x.Messages) > MaxMessagesPerChunk {
		c.tooLarge("messages", "%d messages exceed %d", len(x.Messages), MaxMessagesPerChunk)
	}
	var size int
	for i, m := range x.Messages {
		c.nested(fmt.Sprintf("messages[%d]", i), m.Validate())
		if m != nil {
			size += len(m.Ciphertext)
		}
		if c.err != nil {
			break
		}
	}
	if size > MaxChunkBytes {
		c.tooLarge("messages", "%d bytes of ciphertext exceed %d", size, MaxChunkBytes)
	}
	return c.err
}

// Validate checks a shard's close of a round.
func (x *ShardClose) Validate() error {
	c := &v{msg: "ShardClose"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	if c.required("header", x.Header != nil) {
		c.nested("header", x.Header.Validate())
	}
	if c.err != nil {
		return c.err
	}
	h := x.Header
	c.atLeast("header.round", h.Round, 1)
	if h.Shards == 0 || h.Shard == 0 {
		c.bad("header.shard", "shard %d of %d: a part needs a shard in 1..shards", h.Shard, h.Shards)
	}
	if h.Counts.Messages != 0 || h.Counts.Dummies != 0 {
		c.bad("header.counts", "the front sets no messages or dummies (%d, %d): the shard counts its part", h.Counts.Messages, h.Counts.Dummies)
	}
	c.intIn("counts", int64(len(x.Counts)), 0, MaxDimension)
	for j, n := range x.Counts {
		if n < 0 || n > int64(x.Senders)*int64(MaxMessagesPerReport) {
			c.bad(fmt.Sprintf("counts[%d]", j), "%d messages for %d senders", n, x.Senders)
			break
		}
	}
	if x.Senders != h.Counts.Reports {
		c.bad("senders", "%d senders, the header says %d reports", x.Senders, h.Counts.Reports)
	}
	return c.err
}
