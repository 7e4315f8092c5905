package wire

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// analyzerBoundFields is the allow-list of every field the analyzer can
// receive from the shuffler: the closure of BatchChunk (SubmitBatch's
// stream). Each entry is a field's full name and its kind. The shuffler
// knows which client sent what; none of that may reach the analyzer, so a
// new field here (a sender id, an arrival index, a per-report timestamp)
// must be argued for in docs/DEPLOYMENT.md and added to this list by hand.
//
//   - BatchChunk.header/messages: the stream's framing.
//   - SealedMessage.label: the public label (a coordinate, the metadata
//     label or the whole-report label) and the sealed payload; the label is
//     bound into the ciphertext's associated data.
//   - BatchHeader.round, run_id: which round of which run.
//   - BatchHeader.counts: reports (the accountant's number of reporters),
//     messages, dummies, rejected (counts by reason name), population and
//     sampled (the true sampling rate).
//   - BatchHeader.reporter_epsilons/deltas: the reporters' budgets, each
//     list sorted and unlinked from the other and from identities.
//   - BatchHeader.shards, shard: how many shuffler shards split the round
//     and which one sent this part. A per-coordinate message's shard is a
//     function of its public label; a whole report's shard is drawn
//     uniformly and independently of its sender (docs/DEPLOYMENT.md,
//     "Shuffler shards"), so neither says anything of a sender.
var analyzerBoundFields = map[protoreflect.FullName]string{
	"shufflefl.wire.v1.BatchChunk.header":             "message shufflefl.wire.v1.BatchHeader",
	"shufflefl.wire.v1.BatchChunk.messages":           "repeated message shufflefl.wire.v1.SealedMessage",
	"shufflefl.wire.v1.SealedMessage.label":           "uint32",
	"shufflefl.wire.v1.SealedMessage.ciphertext":      "bytes",
	"shufflefl.wire.v1.BatchHeader.round":             "int64",
	"shufflefl.wire.v1.BatchHeader.run_id":            "string",
	"shufflefl.wire.v1.BatchHeader.counts":            "message shufflefl.wire.v1.BatchCounts",
	"shufflefl.wire.v1.BatchHeader.reporter_epsilons": "repeated double",
	"shufflefl.wire.v1.BatchHeader.reporter_deltas":   "repeated double",
	"shufflefl.wire.v1.BatchHeader.shards":            "uint32",
	"shufflefl.wire.v1.BatchHeader.shard":             "uint32",
	"shufflefl.wire.v1.BatchCounts.reports":           "uint32",
	"shufflefl.wire.v1.BatchCounts.messages":          "uint64",
	"shufflefl.wire.v1.BatchCounts.dummies":           "uint64",
	"shufflefl.wire.v1.BatchCounts.rejected":          "map<string, uint32>",
	"shufflefl.wire.v1.BatchCounts.population":        "uint32",
	"shufflefl.wire.v1.BatchCounts.sampled":           "uint32",
}

// fieldKind describes a field as the allow-list spells it.
func fieldKind(f protoreflect.FieldDescriptor) string {
	kind := func(f protoreflect.FieldDescriptor) string {
		if f.Kind() == protoreflect.MessageKind || f.Kind() == protoreflect.GroupKind {
			return "message " + string(f.Message().FullName())
		}
		return f.Kind().String()
	}
	switch {
	case f.IsMap():
		return fmt.Sprintf("map<%s, %s>", kind(f.MapKey()), kind(f.MapValue()))
	case f.IsList():
		return "repeated " + kind(f)
	}
	return kind(f)
}

// disallowedFields walks every message reachable from root and returns the
// fields that are not in allowed (or differ in kind from it), and the
// allow-list's entries that were not found.
func disallowedFields(root protoreflect.MessageDescriptor, allowed map[protoreflect.FullName]string) (extra, missing []string) {
	seen := map[protoreflect.FullName]bool{}
	found := map[protoreflect.FullName]bool{}
	var walk func(m protoreflect.MessageDescriptor)
	walk = func(m protoreflect.MessageDescriptor) {
		if seen[m.FullName()] {
			return
		}
		seen[m.FullName()] = true
		fs := m.Fields()
		for i := range fs.Len() {
			f := fs.Get(i)
			got := fieldKind(f)
			if want, ok := allowed[f.FullName()]; !ok || want != got {
				extra = append(extra, fmt.Sprintf("%s (%s)", f.FullName(), got))
			} else {
				found[f.FullName()] = true
			}
			switch {
			case f.IsMap():
				if v := f.MapValue(); v.Message() != nil {
					walk(v.Message())
				}
			case f.Message() != nil:
				walk(f.Message())
			}
		}
	}
	walk(root)
	for name := range allowed {
		if !found[name] {
			missing = append(missing, string(name))
		}
	}
	slices.Sort(extra)
	slices.Sort(missing)
	return extra, missing
}

// TestAnalyzerBoundAllowList: what the shuffler forwards to the analyzer
// carries exactly the allow-listed fields.
func TestAnalyzerBoundAllowList(t *testing.T) {
	extra, missing := disallowedFields((&BatchChunk{}).ProtoReflect().Descriptor(), analyzerBoundFields)
	if len(extra) > 0 {
		t.Errorf("fields the analyzer receives that are not in the allow-list (a sender's identity must never reach it; "+
			"argue for a new field and add it to analyzerBoundFields): %s", strings.Join(extra, ", "))
	}
	if len(missing) > 0 {
		t.Errorf("allow-listed fields no longer in the batch (remove them from analyzerBoundFields): %s", strings.Join(missing, ", "))
	}
}

// TestAllowListRejectsSenderID: the check fails when the batch header
// carries a sender id (the header's descriptor, rebuilt with one more
// field) and when it is rooted at a client's request, which names its
// client.
func TestAllowListRejectsSenderID(t *testing.T) {
	fd := protodesc.ToFileDescriptorProto(File_transport_wire_shufflefl_proto)
	for _, m := range fd.MessageType {
		if m.GetName() == "BatchHeader" {
			m.Field = append(m.Field, &descriptorpb.FieldDescriptorProto{
				Name: proto.String("sender_ids"), JsonName: proto.String("senderIds"), Number: proto.Int32(99),
				Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(),
				Type:  descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
			})
		}
	}
	f, err := protodesc.NewFile(fd, nil)
	if err != nil {
		t.Fatal(err)
	}
	chunk := f.Messages().ByName("BatchChunk")
	if extra, _ := disallowedFields(chunk, analyzerBoundFields); !slices.Contains(extra, "shufflefl.wire.v1.BatchHeader.sender_ids (repeated string)") {
		t.Fatalf("a sender id in the header was not flagged: %v", extra)
	}
	extra, _ := disallowedFields((&SubmitReportRequest{}).ProtoReflect().Descriptor(), analyzerBoundFields)
	if !slices.Contains(extra, "shufflefl.wire.v1.RequestAuth.client_id (string)") {
		t.Fatalf("a client's request was not flagged: %v", extra)
	}
}
