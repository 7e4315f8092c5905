package wire

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// DefaultMaxMessageBytes is the default bound on one gRPC message in either
// direction: a per-coordinate report of d = 101,770 (about 7 MB sealed) or a
// round's k = 16 models of that size (13 MB) fit with room; SubmitBatch
// streams its batch in chunks each below it.
const DefaultMaxMessageBytes = 64 << 20

// ServerOptions returns the options every shufflefl gRPC server uses:
// receive and send limits of maxMessageBytes (DefaultMaxMessageBytes if
// <= 0), keepalive enforcement, Codec, and interceptors that Validate every
// request message before the handler sees it, answering an invalid one with
// StatusOf's status; streamed requests are decoded by the server itself
// (see Strict), and unary ones too when the service is registered through
// Strict. Add transport credentials (grpc.Creds) yourself.
func ServerOptions(maxMessageBytes int) []grpc.ServerOption {
	if maxMessageBytes <= 0 {
		maxMessageBytes = DefaultMaxMessageBytes
	}
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxMessageBytes),
		grpc.MaxSendMsgSize(maxMessageBytes),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.ForceServerCodecV2(Codec{}),
		grpc.ChainUnaryInterceptor(validateUnaryServer),
		grpc.ChainStreamInterceptor(strictStreamServer),
	}
}

// DialOptions returns the options every shufflefl gRPC client uses: call
// limits of maxMessageBytes (DefaultMaxMessageBytes if <= 0) and
// interceptors that Validate every reply (unary and streamed) before the
// caller sees it, so a misbehaving server cannot hand the caller a malformed
// message, and that send a signed request's header (AuthHeader) with it. Add transport credentials (grpc.WithTransportCredentials)
// yourself.
func DialOptions(maxMessageBytes int) []grpc.DialOption {
	if maxMessageBytes <= 0 {
		maxMessageBytes = DefaultMaxMessageBytes
	}
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageBytes), grpc.MaxCallSendMsgSize(maxMessageBytes)),
		grpc.WithChainUnaryInterceptor(attachHeader, validateUnaryClient),
		grpc.WithChainStreamInterceptor(validateStreamClient),
	}
}

func validateAny(m any) error {
	if v, ok := m.(interface{ Validate() error }); ok {
		return StatusOf(v.Validate())
	}
	return nil
}

func validateUnaryServer(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := validateAny(req); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func validateUnaryClient(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
		return err
	}
	return validateAny(reply)
}

type validatingClientStream struct{ grpc.ClientStream }

// RecvMsg receives and validates the next reply message.
func (s validatingClientStream) RecvMsg(m any) error {
	if err := s.ClientStream.RecvMsg(m); err != nil {
		return err
	}
	return validateAny(m)
}

func validateStreamClient(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return validatingClientStream{s}, nil
}
