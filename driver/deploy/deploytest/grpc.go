package deploytest

import (
	"errors"

	"google.golang.org/grpc"

	"github.com/shufflefl/shufflefl/driver/deploy"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// GRPC is the network transport: each service is served by gRPC on an
// ephemeral port of 127.0.0.1 with the deployment's TLS (mutual TLS between
// shuffler and analyzer), and reached through fresh connections.
type GRPC struct{}

// Name implements Driver.
func (GRPC) Name() string { return "grpc" }

// ServeShuffler implements Driver.
func (GRPC) ServeShuffler(creds *deploy.Credentials, sh *deploy.Shuffler) (wire.ShufflerClient, wire.ShufflerControlClient, func(), error) {
	pub, ctl := deploy.ShufflerServers(creds, sh)
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	paddr, err := serve(pub, &stops)
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	caddr, err := serve(ctl, &stops)
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	pconn, err := deploy.DialShuffler(creds, paddr)
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	stops = append(stops, func() { pconn.Close() })
	cconn, err := deploy.DialShufflerControl(creds, caddr)
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	stops = append(stops, func() { cconn.Close() })
	return wire.NewShufflerClient(pconn), wire.NewShufflerControlClient(cconn), stop, nil
}

// ServeAnalyzer implements Driver.
func (GRPC) ServeAnalyzer(creds *deploy.Credentials, an *deploy.Analyzer) (wire.AnalyzerClient, func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	addr, err := serve(deploy.AnalyzerServer(creds, an), &stops)
	if err != nil {
		return nil, nil, err
	}
	conn, err := deploy.DialAnalyzer(creds, addr)
	if err != nil {
		stop()
		return nil, nil, err
	}
	stops = append(stops, func() { conn.Close() })
	return wire.NewAnalyzerClient(conn), stop, nil
}

// serve serves g on an ephemeral loopback port, adding its Stop to stops.
func serve(g *grpc.Server, stops *[]func()) (string, error) {
	l, err := deploy.Listen()
	if err != nil {
		return "", errors.Join(errors.New("roletest: listening"), err)
	}
	go g.Serve(l)
	*stops = append(*stops, g.Stop)
	return l.Addr().String(), nil
}
