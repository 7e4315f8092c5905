package wire

import (
	"errors"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
)

// gRPC decodes a unary request before any interceptor runs, and answers
// bytes that are not protobuf with Internal ("failed to unmarshal") and a
// request over the receive limit with ResourceExhausted, both without an
// ErrorDetail. A shufflefl server therefore receives every request
// undecoded (Encoded, through Codec) and decodes it itself (Unmarshal), so
// that each refusal carries its documented status and detail: Strict for
// the unary methods, the stream interceptor of ServerOptions for streams.

// Encoded is a message's protobuf encoding, received or sent as it is by
// Codec.
type Encoded struct{ Bytes []byte }

// Codec is the gRPC codec of shufflefl servers (ServerOptions): protobuf,
// with *Encoded passed through undecoded.
type Codec struct{}

var protoCodec = encoding.GetCodecV2(proto.Name)

// Marshal encodes v (an *Encoded as it is).
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	if e, ok := v.(*Encoded); ok {
		return mem.BufferSlice{mem.SliceBuffer(e.Bytes)}, nil
	}
	return protoCodec.Marshal(v)
}

// Unmarshal decodes data into v (into an *Encoded, a copy of the bytes).
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	if e, ok := v.(*Encoded); ok {
		e.Bytes = data.Materialize()
		return nil
	}
	return protoCodec.Unmarshal(data, v)
}

// Name is "proto": the wire format is protobuf's.
func (Codec) Name() string { return proto.Name }

// Strict returns a copy of sd whose unary methods decode their request with
// recvStrict (see Encoded), so every refusal before the handler carries an
// ErrorDetail: a request over the receive limit is ResourceExhausted
// REASON_TOO_LARGE, bytes that are not protobuf are InvalidArgument
// REASON_MALFORMED, a message failing Validate StatusOf's status, and a
// client request without auth Unauthenticated REASON_BAD_SIGNATURE. The
// server must use ServerOptions (its Codec). Register the result with
// grpc.Server.RegisterService.
func Strict(sd *grpc.ServiceDesc) *grpc.ServiceDesc {
	out := *sd
	out.Methods = nil
	out.Streams = append([]grpc.StreamDesc(nil), sd.Streams...)
	for _, md := range sd.Methods {
		h := md.Handler
		out.Streams = append(out.Streams, grpc.StreamDesc{StreamName: md.MethodName, Handler: func(srv any, ss grpc.ServerStream) error {
			reply, err := h(srv, ss.Context(), func(m any) error { return recvStrict(ss, m) }, nil)
			if err != nil {
				return err
			}
			return ss.SendMsg(reply)
		}})
	}
	return &out
}

// recvStrict receives the next message of ss undecoded and decodes it
// into m with Unmarshal, mapping every refusal to its status.
func recvStrict(ss grpc.ServerStream, m any) error {
	var e Encoded
	if err := ss.RecvMsg(&e); err != nil {
		if st, ok := status.FromError(err); ok && st.Code() == codes.ResourceExhausted {
			return Errorf(codes.ResourceExhausted, Reason_REASON_TOO_LARGE, "", -1, "%s", st.Message())
		}
		return err
	}
	msg, ok := m.(Message)
	if !ok {
		return Errorf(codes.Internal, Reason_REASON_INTERNAL, "", -1, "%T is not a shufflefl message", m)
	}
	err := Unmarshal(e.Bytes, msg)
	var fe *FieldError
	if ar, ok := m.(AuthRequest); ok && errors.As(err, &fe) && (fe.Field == "auth" || strings.HasPrefix(fe.Field, "auth.")) {
		return Errorf(codes.Unauthenticated, Reason_REASON_BAD_SIGNATURE, fe.Field, RequestRound(ar), "no credentials: %v", err)
	}
	return StatusOf(err)
}

// strictServerStream decodes every streamed request with recvStrict.
type strictServerStream struct{ grpc.ServerStream }

// RecvMsg receives, decodes and validates the next request message.
func (s strictServerStream) RecvMsg(m any) error { return recvStrict(s.ServerStream, m) }

func strictStreamServer(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, strictServerStream{ss})
}
