package jetstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// ClusterConfig makes an embedded [Server] one node of a JetStream
// cluster (see [WithCluster]).
type ClusterConfig struct {
	// Name is the cluster's name, the same on every node.
	Name string
	// Port is the node's route port on 127.0.0.1 (0: a free one, see
	// [Server.ClusterURL]; the other nodes must know it, so a cluster's
	// ports are usually chosen beforehand, e.g. by [FreeLoopbackPorts]).
	Port int
	// Routes are the nats-route://HOST:PORT URLs of the nodes, at least
	// one (JetStream refuses a cluster node without routes). The same
	// list can be given to every node: a node's own URL among them is
	// recognised and skipped by the server.
	Routes []string
}

// WithCluster makes the server a node of a JetStream cluster: it listens
// for routes from the other nodes on 127.0.0.1:cfg.Port and routes to
// cfg.Routes. Every node needs its own store directory and its own
// [WithServerName], and the client listener of [WithLoopbackPort]; a
// stream of R replicas ([WithReplicas]) is stored on R nodes and keeps
// accepting and delivering while a majority of them is up. Without
// [WithTLS] the routes carry no authentication (the listener is on
// loopback only, so anything on this machine could join); with it, they
// are mutual TLS and a node admits only peers whose certificate its check
// accepts. A cluster across machines is configured in nats-server.conf
// (see docs/DEPLOYMENT.md).
func WithCluster(cfg ClusterConfig) Option {
	return func(c *serverConfig) error {
		if cfg.Name == "" {
			return errors.New("cluster: empty name")
		}
		if strings.ContainsAny(cfg.Name, " \t\n") {
			return fmt.Errorf("cluster: name %q has a space", cfg.Name)
		}
		if cfg.Port < 0 || cfg.Port > 65535 {
			return fmt.Errorf("cluster: route port %d is not in [0, 65535]", cfg.Port)
		}
		if len(cfg.Routes) == 0 {
			return errors.New("cluster: no routes (a JetStream cluster node needs at least one)")
		}
		var routes []*url.URL
		for _, r := range cfg.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return fmt.Errorf("cluster: route %q: %w", r, err)
			}
			if u.Scheme != "nats-route" && u.Scheme != "nats" {
				return fmt.Errorf("cluster: route %q is not a nats-route:// URL", r)
			}
			if u.Port() == "" {
				return fmt.Errorf("cluster: route %q has no port", r)
			}
			routes = append(routes, u)
		}
		c.cluster = &clusterConfig{name: cfg.Name, port: cfg.Port, routes: routes}
		return nil
	}
}

type clusterConfig struct {
	name   string
	port   int
	routes []*url.URL
}

// apply sets the cluster options of o.
func (cc *clusterConfig) apply(o *server.Options) {
	o.Cluster = server.ClusterOpts{Name: cc.name, Host: "127.0.0.1", Port: cc.port}
	if cc.port == 0 {
		o.Cluster.Port = server.RANDOM_PORT
	}
	o.Routes = cc.routes
}

// ClusterURL returns the node's nats-route:// URL on the loopback
// interface, which the other nodes list in their [ClusterConfig.Routes],
// or "" when the server is not a cluster node.
func (s *Server) ClusterURL() string {
	return s.routeURL
}

// routeURLOf returns the nats-route:// URL of ns's route listener.
func routeURLOf(ns *server.Server) (string, error) {
	addr := ns.ClusterAddr()
	if addr == nil {
		return "", errors.New("no route listener")
	}
	return RouteURL(addr.Port), nil
}

// FreeLoopbackPorts returns n distinct TCP ports that were free on
// 127.0.0.1 a moment ago (each was listened on and closed), for a
// cluster's client and route ports chosen before its nodes start. Another
// process may take one meanwhile; the node that then cannot listen fails
// to start with an error.
func FreeLoopbackPorts(n int) ([]int, error) {
	if n < 1 || n > 1000 {
		return nil, fmt.Errorf("jetstream: free ports: %d is not in [1, 1000]", n)
	}
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("jetstream: free ports: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// RouteURL is the nats-route:// URL of a route port on 127.0.0.1.
func RouteURL(port int) string {
	return "nats-route://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// ClientURL is the nats:// URL of a client port on 127.0.0.1.
func ClientURL(port int) string {
	return "nats://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// StreamLeader returns the name of the cluster node that leads the stream
// name (the node whose loss makes the others elect a new leader), or the
// server's name on a single server.
func (c *Conn) StreamLeader(ctx context.Context, name string) (string, error) {
	s, err := c.js.Stream(ctx, name)
	if err != nil {
		return "", fmt.Errorf("jetstream: stream %s: %w", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return "", fmt.Errorf("jetstream: stream %s: %w", name, err)
	}
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return "", fmt.Errorf("jetstream: stream %s has no leader now", name)
	}
	return info.Cluster.Leader, nil
}

// ConnectedURL returns the URL of the server the connection is on now
// ("" while it is reconnecting).
func (c *Conn) ConnectedURL() string { return c.nc.ConnectedUrl() }
