package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"skyloop/engine"
	"skyloop/foxglove"
	"skyloop/internal/nodetest"
	"skyloop/view"
)

// TestFoxgloveLiveClient serves a run over the Foxglove WebSocket protocol
// and connects @foxglove/ws-protocol's FoxgloveClient from npm
// (foxglove/testdata/node/live.mjs), a client we did not write: it gets
// the server's info, the advertised channels with Foxglove's schema names,
// and, after subscribing, the scene and every vehicle's transform. The run
// writes the same files with and without the server.
func TestFoxgloveLiveClient(t *testing.T) {
	node, dir := nodetest.Readers(t, "@foxglove/ws-protocol")
	if _, err := foxglove.NewServer("0.0.0.0:0", foxglove.ServerOptions{}); err == nil {
		t.Fatal("a server on 0.0.0.0 without a token was accepted")
	}
	srv, err := foxglove.NewServer("127.0.0.1:0", foxglove.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// Four transforms, one per vehicle: on a loaded machine the unpaced run
	// can end before the client subscribes, and a late subscriber gets each
	// vehicle's last state once.
	cmd := exec.Command(node, "live.mjs", srv.URL(), "4", "120000") // the timeout only bounds a failure
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if n, _ := srv.Clients(); n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client did not connect: %s", stderr.String())
		}
	}
	base := t.TempDir()
	res, err := Execute(buildYAML(t, mcapYAML, engine.Options{Registry: registry, Workers: 1}), filepath.Join(base, "live"), Options{Live: srv})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("live.mjs: %v\n%s", err, stderr.String())
	}
	var got struct {
		Why      string            `json:"why"`
		Server   string            `json:"server"`
		Channels map[string]string `json:"channels"`
		Counts   map[string]int    `json:"counts"`
		Frames   []string          `json:"frames"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("live.mjs printed %q: %v (%s)", stdout.String(), err, stderr.String())
	}
	if got.Why != "enough" || got.Server != "skyloop" {
		t.Fatalf("client: %+v (%s)", got, stderr.String())
	}
	for topic, schema := range map[string]string{foxglove.TopicTF: "foxglove.FrameTransform", foxglove.TopicScene: "foxglove.SceneUpdate",
		foxglove.TopicEvents: "foxglove.Log", foxglove.TopicNetwork: "skyloop.NetworkEvent",
		foxglove.FixTopic("uav-3"): "foxglove.LocationFix", foxglove.TelemetryTopic("uav-3"): "skyloop.Telemetry"} {
		if got.Channels[topic] != schema {
			t.Errorf("channel %s: schema %q, want %q", topic, got.Channels[topic], schema)
		}
	}
	if len(got.Frames) != 4 || got.Counts[foxglove.TopicScene] < 1 {
		t.Errorf("transforms of %v, %d scene updates: want all four vehicles and the scene", got.Frames, got.Counts[foxglove.TopicScene])
	}
	// The server changes nothing in the run's files.
	plain := filepath.Join(base, "plain")
	runYAML(t, mcapYAML, engine.Options{Registry: registry, Workers: 1}, plain)
	a, b := readDir(t, res.Dir), readDir(t, plain)
	delete(a, "meta.json")
	delete(b, "meta.json")
	for name, data := range b {
		if !bytes.Equal(a[name], data) {
			t.Errorf("%s differs with the live server", name)
		}
	}
}

// TestServerToken: a server with a token answers nothing without it (page
// or WebSocket), serves the page with ?token= and sets the cookie that
// lets the page's next requests through.
func TestServerToken(t *testing.T) {
	srv, err := foxglove.NewServer("127.0.0.1:0", foxglove.ServerOptions{Pages: view.Pages(), Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	base := "http://" + srv.Addr()
	get := func(url string, cookie *http.Cookie) *http.Response {
		req, _ := http.NewRequest("GET", url, nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := get(base+"/", nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %s", r.Status)
	}
	if r := get(base+"/?token=wrong", nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: %s", r.Status)
	}
	r := get(base+"/?token=s3cret", nil)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("right token: %s", r.Status)
	}
	var cookie *http.Cookie
	for _, c := range r.Cookies() {
		if c.Name == foxglove.TokenCookie {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatal("no token cookie set")
	}
	if r := get(base+"/app.js", cookie); r.StatusCode != http.StatusOK {
		t.Errorf("script with the cookie: %s", r.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, _, err := websocket.Dial(ctx, "ws://"+srv.Addr()+"/", &websocket.DialOptions{Subprotocols: []string{foxglove.Subprotocol}}); err == nil {
		c.CloseNow()
		t.Error("a WebSocket without the token was accepted")
	}
	c, _, err := websocket.Dial(ctx, "ws://"+srv.Addr()+"/?token=s3cret", &websocket.DialOptions{Subprotocols: []string{foxglove.Subprotocol}})
	if err != nil {
		t.Fatalf("a WebSocket with the token: %v", err)
	}
	c.CloseNow()
}

// TestServerAnswersOnlyItsHost: the live server (page, /control and the
// Foxglove WebSocket) answers only requests naming its address; a page
// reached through another name that resolves to it (DNS rebinding) gets
// 421. On fc3ddb2 Host: attacker.example got the page, /control and the
// WebSocket.
func TestServerAnswersOnlyItsHost(t *testing.T) {
	pace := &PaceControl{}
	srv, err := foxglove.NewServer("127.0.0.1:0", foxglove.ServerOptions{Pages: view.LivePages(pace, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Addr())
	do := func(method, host, path, body string) (int, string) {
		req, _ := http.NewRequest(method, "http://"+srv.Addr()+path, strings.NewReader(body))
		req.Host = host
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, host := range []string{"attacker.example", "attacker.example:" + port, "localhost.attacker.example:" + port} {
		for _, path := range []string{"/", "/control", "/app.js"} {
			if code, body := do("GET", host, path, ""); code != http.StatusMisdirectedRequest {
				t.Errorf("GET %s with Host %s: %d %.60q, want 421", path, host, code, body)
			}
		}
		if code, _ := do("POST", host, "/control", `{"pause":true}`); code != http.StatusMisdirectedRequest {
			t.Errorf("POST /control with Host %s: %d, want 421", host, code)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, resp, err := websocket.Dial(ctx, "ws://"+srv.Addr()+"/", &websocket.DialOptions{Host: host, Subprotocols: []string{foxglove.Subprotocol}})
		cancel()
		if err == nil {
			c.CloseNow()
			t.Errorf("a WebSocket with Host %s was accepted", host)
		} else if resp == nil || resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("a WebSocket with Host %s: %v, want 421", host, err)
		}
	}
	if paused, _ := pace.State(); paused {
		t.Fatal("a request with another Host paused the run")
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port} {
		if code, body := do("GET", host, "/control", ""); code != http.StatusOK {
			t.Errorf("GET /control with Host %s: %d %q", host, code, body)
		}
	}
	// A server on every interface answers the machine's names, and those
	// given, with its token.
	name, _ := os.Hostname()
	wild, err := foxglove.NewServer("0.0.0.0:0", foxglove.ServerOptions{Pages: view.Pages(), Token: "s3cret", Hosts: []string{"drone-lab.example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	defer wild.Close()
	_, wport, _ := net.SplitHostPort(wild.Addr())
	for host, want := range map[string]int{"127.0.0.1:" + wport: 200, name + ":" + wport: 200, "drone-lab.example.org:" + wport: 200, "attacker.example:" + wport: 421} {
		req, _ := http.NewRequest("GET", "http://127.0.0.1:"+wport+"/?token=s3cret", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("0.0.0.0 server, Host %s: %s, want %d", host, resp.Status, want)
		}
	}
}

// TestWebSocketOrigins: the Foxglove WebSocket takes clients that send no
// Origin (Foxglove desktop, scripts), the page served on the same address,
// the Foxglove web app and desktop applications' pages; another site's
// page (cross-site WebSocket hijacking) and the opaque origin "null" are
// refused, unless the URL carries the server's token. fc3ddb2 refused the
// Foxglove web app that skyloop run --foxglove points to.
func TestWebSocketOrigins(t *testing.T) {
	srv, err := foxglove.NewServer("127.0.0.1:0", foxglove.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dial := func(url, origin string) error {
		h := http.Header{}
		if origin != "" {
			h.Set("Origin", origin)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h, Subprotocols: []string{foxglove.Subprotocol}})
		if err == nil {
			c.CloseNow()
		}
		return err
	}
	for origin, ok := range map[string]bool{
		"":                                      true,
		"http://" + srv.Addr():                  true,
		"https://app.foxglove.dev":              true,
		"file://":                               true,
		"http://evil.example":                   false,
		"https://app.foxglove.dev.evil.example": false,
		"null":                                  false,
	} {
		if err := dial(srv.URL(), origin); ok != (err == nil) {
			t.Errorf("Origin %q: %v, want accepted %v", origin, err, ok)
		}
	}
	tok, err := foxglove.NewServer("127.0.0.1:0", foxglove.ServerOptions{Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	if err := dial(tok.URL()+"/?token=s3cret", "http://elsewhere.example"); err != nil {
		t.Errorf("a client given the URL with the token was refused: %v", err)
	}
}
