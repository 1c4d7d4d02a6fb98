// Package webguard decides which requests skyloop's web servers answer:
// the live view and Foxglove WebSocket of `skyloop run --serve` and
// `--foxglove`, and the replay of `skyloop view`. Loopback is not a
// boundary against the user's own browser: any web page the user visits
// can send requests to 127.0.0.1, and a name the attacker controls can be
// re-resolved to it (DNS rebinding). So, on every address:
//
//   - Host: a request is served only when its Host header names the
//     listen address: that address, the localhost names and loopback
//     addresses when it is loopback, the machine's own addresses and host
//     name when it is a wildcard (0.0.0.0, ::), and the names the user
//     gives. Other requests are answered 421 with the names served.
//   - State changes (POST) must come from the page itself (the browser's
//     Sec-Fetch-Site or Origin header, net/http.CrossOriginProtection) and
//     carry JSON (a cross-site page can send text/plain or a form without
//     asking, but not application/json).
//   - WebSocket upgrades are accepted from clients that send no Origin (not
//     a browser: Foxglove desktop's native connection, scripts), from the
//     page served on the same Host, from the Foxglove web app
//     (FoxgloveApp), from desktop applications' pages (origins whose scheme
//     is not http or https, such as file:// or app://), from the origins
//     the user gives, and from any origin when the request carries the
//     server's token in its URL (the user handed that URL over). The
//     opaque origin "null" is refused: any web page can send it from a
//     sandboxed frame.
//   - Every response carries SetHeaders' headers: a Content-Security-Policy
//     without inline script, nosniff, no framing, no referrer.
package webguard

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
)

// FoxgloveApp is the origin of the Foxglove web app, which opens the
// WebSocket of a live run from the user's browser.
const FoxgloveApp = "https://app.foxglove.dev"

// Hosts is the set of Host names a server answers.
type Hosts struct {
	names []string     // lower case, without a trailing dot
	addrs []netip.Addr // unmapped, without zone
	local bool         // localhost names and loopback addresses
}

// NewHosts returns the Host names a server listening on listen (host:port)
// answers, with extra (names or addresses the machine is reached by, e.g.
// a DNS name of a cluster node) added.
func NewHosts(listen string, extra []string) (*Hosts, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", listen, err)
	}
	h := &Hosts{}
	for _, e := range extra {
		if err := h.add(e); err != nil {
			return nil, err
		}
	}
	a, err := netip.ParseAddr(host)
	switch {
	case host == "" || err == nil && a.IsUnspecified():
		// Every interface: the machine's addresses and name.
		h.local = true
		ifaddrs, err := net.InterfaceAddrs()
		if err != nil {
			return nil, fmt.Errorf("listen address %q: listing the machine's addresses: %w", listen, err)
		}
		for _, ia := range ifaddrs {
			if p, err := netip.ParsePrefix(ia.String()); err == nil {
				h.addrs = append(h.addrs, p.Addr().WithZone("").Unmap())
			}
		}
		if name, err := os.Hostname(); err == nil && name != "" {
			h.add(name)
		}
	case err == nil:
		a = a.WithZone("").Unmap()
		h.addrs = append(h.addrs, a)
		if a.IsLoopback() {
			h.local = true
		} else if name, err := os.Hostname(); err == nil && name != "" {
			h.add(name)
		}
	default:
		if err := h.add(host); err != nil {
			return nil, err
		}
		if isLocalName(normal(host)) {
			h.local = true
		}
	}
	return h, nil
}

func (h *Hosts) add(name string) error {
	n := normal(strings.Trim(strings.TrimSpace(name), "[]"))
	if a, err := netip.ParseAddr(n); err == nil {
		h.addrs = append(h.addrs, a.WithZone("").Unmap())
		return nil
	}
	if n == "" || strings.ContainsAny(n, "/:@[] \t") {
		return fmt.Errorf("host name %q: not a host name or address", name)
	}
	h.names = append(h.names, n)
	return nil
}

func normal(name string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ".")
}

func isLocalName(n string) bool {
	return n == "localhost" || strings.HasSuffix(n, ".localhost")
}

// Allowed reports whether the Host header host (name or address, with or
// without a port) is one of h's.
func (h *Hosts) Allowed(host string) bool {
	if host == "" {
		return false
	}
	name := host
	if n, _, err := net.SplitHostPort(host); err == nil {
		name = n
	}
	name = normal(strings.Trim(name, "[]"))
	if a, err := netip.ParseAddr(name); err == nil {
		a = a.WithZone("").Unmap()
		return h.local && a.IsLoopback() || slices.Contains(h.addrs, a)
	}
	return h.local && isLocalName(name) || slices.Contains(h.names, name)
}

// String lists the names served, for messages.
func (h *Hosts) String() string {
	var out []string
	if h.local {
		out = append(out, "localhost", "127.0.0.1", "[::1]")
	}
	for _, a := range h.addrs {
		if h.local && a.IsLoopback() {
			continue
		}
		if a.Is6() {
			out = append(out, "["+a.String()+"]")
		} else {
			out = append(out, a.String())
		}
	}
	out = append(out, h.names...)
	return strings.Join(out, ", ")
}

// CheckHost answers 421 (and returns false) when r's Host is not one of
// h's: a page reached by another name (DNS rebinding) gets nothing.
func (h *Hosts) CheckHost(w http.ResponseWriter, r *http.Request) bool {
	if h.Allowed(r.Host) {
		return true
	}
	SetHeaders(w.Header())
	http.Error(w, fmt.Sprintf("skyloop serves this address only by the names %s, not %q: open the address skyloop printed", h, r.Host),
		http.StatusMisdirectedRequest)
	return false
}

// Handler serves next for the requests whose Host is one of h's, with
// SetHeaders' headers on every response.
func (h *Hosts) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.CheckHost(w, r) {
			return
		}
		SetHeaders(w.Header())
		next.ServeHTTP(w, r)
	})
}

// ContentSecurityPolicy is the policy of every page: scripts, styles,
// images and connections (the page's WebSocket included: 'self' covers
// ws: to the same host) only from the server itself, no inline script or
// style, no plugins, no framing, no forms.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// SetHeaders sets the security headers every response of skyloop's web
// servers carries.
func SetHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// ErrCrossOrigin is wrapped by the errors of requests refused because
// they come from another site's page.
var ErrCrossOrigin = errors.New("cross-origin request refused")

// ErrNotJSON is wrapped by the errors of state changes that do not carry
// JSON.
var ErrNotJSON = errors.New("a JSON body is required")

var sameOrigin = http.NewCrossOriginProtection()

// CheckChange checks a state-changing request (POST): it must come from
// the page itself, not another site's (ErrCrossOrigin), and carry
// Content-Type application/json (ErrNotJSON).
func CheckChange(r *http.Request) error {
	if err := sameOrigin.Check(r); err != nil {
		return fmt.Errorf("%w: only the page skyloop serves may change the run (%v; Origin %q)", ErrCrossOrigin, err, r.Header.Get("Origin"))
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return fmt.Errorf("%w: Content-Type is %q, want application/json", ErrNotJSON, ct)
	}
	return nil
}

// WriteChangeError answers a request CheckChange refused: 403 for another
// site's page, 415 for a body that is not JSON.
func WriteChangeError(w http.ResponseWriter, err error) {
	code := http.StatusForbidden
	if errors.Is(err, ErrNotJSON) {
		code = http.StatusUnsupportedMediaType
	}
	http.Error(w, err.Error(), code)
}

// CheckWebSocketOrigin applies the WebSocket rule in the package comment
// to the upgrade request r: withToken says r carries the server's token in
// its URL; extra are more origins the user allows (scheme://host[:port]).
func CheckWebSocketOrigin(r *http.Request, withToken bool, extra []string) error {
	origin := r.Header.Get("Origin")
	if origin == "" || withToken {
		return nil
	}
	refuse := func(why string) error {
		return fmt.Errorf("%w: a WebSocket from a page at %q (%s); skyloop accepts its own page, the Foxglove app (%s), desktop applications and clients that send no Origin, or any client given the address with its ?token=",
			ErrCrossOrigin, origin, why, FoxgloveApp)
	}
	if origin == "null" {
		return refuse("an opaque origin, which any page can send from a sandboxed frame")
	}
	u, err := url.Parse(origin)
	if err != nil || u.Scheme == "" {
		return refuse("not an origin")
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return nil // a desktop application's own page (file:, app:, ...)
	}
	if strings.EqualFold(u.Host, r.Host) {
		return nil // the page this server served
	}
	o := scheme + "://" + strings.ToLower(u.Host)
	if o == FoxgloveApp {
		return nil
	}
	for _, e := range extra {
		if strings.EqualFold(strings.TrimSuffix(e, "/"), o) {
			return nil
		}
	}
	return refuse("another site")
}
