package webguard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

func TestHostsOfALoopbackAddress(t *testing.T) {
	for _, listen := range []string{"127.0.0.1:8080", "[::1]:0", "localhost:8080"} {
		h, err := NewHosts(listen, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, host := range []string{"127.0.0.1:8080", "127.0.0.1", "localhost:8080", "LOCALHOST.", "[::1]:8080", "app.localhost:1", "127.1.2.3:9"} {
			if !h.Allowed(host) {
				t.Errorf("%s: Host %q refused", listen, host)
			}
		}
		for _, host := range []string{"", "attacker.example", "attacker.example:8080", "localhost.attacker.example", "10.0.0.1", "[::2]:80", "127.0.0.1.nip.io", "localhost@evil"} {
			if h.Allowed(host) {
				t.Errorf("%s: Host %q allowed (DNS rebinding)", listen, host)
			}
		}
	}
}

func TestHostsOfOtherAddresses(t *testing.T) {
	name, _ := os.Hostname()
	h, err := NewHosts("0.0.0.0:8080", []string{"drone-lab.example.org."})
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"127.0.0.1:8080", "localhost", "drone-lab.example.org:8080", "Drone-Lab.Example.Org", name} {
		if !h.Allowed(host) {
			t.Errorf("wildcard: Host %q refused (served %s)", host, h)
		}
	}
	if h.Allowed("attacker.example:8080") {
		t.Error("wildcard: Host attacker.example allowed")
	}
	h, err = NewHosts("192.0.2.7:8080", nil)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{"192.0.2.7:8080": true, "localhost": false, "127.0.0.1": false, "attacker.example": false, "192.0.2.8": false} {
		if h.Allowed(host) != want {
			t.Errorf("192.0.2.7: Host %q allowed %v, want %v", host, !want, want)
		}
	}
	if _, err := NewHosts("127.0.0.1:0", []string{"a/b"}); err == nil {
		t.Error("a host name with a slash was accepted")
	}
}

func TestHostHandlerAnswers421(t *testing.T) {
	h, _ := NewHosts("127.0.0.1:0", nil)
	srv := h.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	req := httptest.NewRequest("GET", "/", nil)
	req.Host = "attacker.example:8080"
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if w.Code != http.StatusMisdirectedRequest || !strings.Contains(w.Body.String(), "attacker.example") {
		t.Errorf("Host attacker.example: %d %q", w.Code, w.Body.String())
	}
	req.Host = "127.0.0.1:8080"
	w = httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if w.Code != http.StatusOK || w.Header().Get("Content-Security-Policy") != ContentSecurityPolicy {
		t.Errorf("Host 127.0.0.1: %d, CSP %q", w.Code, w.Header().Get("Content-Security-Policy"))
	}
}

func TestCheckChange(t *testing.T) {
	post := func(ct string, h map[string]string) *http.Request {
		r := httptest.NewRequest("POST", "http://127.0.0.1:8080/control", strings.NewReader(`{"pause":true}`))
		r.Host = "127.0.0.1:8080"
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		for k, v := range h {
			r.Header.Set(k, v)
		}
		return r
	}
	cases := []struct {
		r    *http.Request
		want error
	}{
		{post("application/json", nil), nil},
		{post("application/json; charset=utf-8", map[string]string{"Origin": "http://127.0.0.1:8080", "Sec-Fetch-Site": "same-origin"}), nil},
		{post("text/plain", map[string]string{"Origin": "https://evil.example"}), ErrCrossOrigin},
		{post("text/plain", map[string]string{"Sec-Fetch-Site": "cross-site"}), ErrCrossOrigin},
		{post("application/json", map[string]string{"Sec-Fetch-Site": "same-site"}), ErrCrossOrigin},
		{post("application/json", map[string]string{"Origin": "http://localhost:8080"}), ErrCrossOrigin},
		{post("text/plain", nil), ErrNotJSON},
		{post("application/x-www-form-urlencoded", map[string]string{"Origin": "http://127.0.0.1:8080"}), ErrNotJSON},
		{post("", nil), ErrNotJSON},
	}
	for i, c := range cases {
		err := CheckChange(c.r)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("case %d (%v): %v, want %v", i, c.r.Header, err, c.want)
		}
	}
}

func TestWebSocketOrigins(t *testing.T) {
	up := func(origin string) *http.Request {
		r := httptest.NewRequest("GET", "http://127.0.0.1:8765/", nil)
		r.Host = "127.0.0.1:8765"
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		return r
	}
	for origin, ok := range map[string]bool{
		"":                                      true, // not a browser
		"http://127.0.0.1:8765":                 true, // the page served here
		FoxgloveApp:                             true,
		"file://":                               true, // a desktop application's page
		"app://foxglove":                        true,
		"https://partner.example":               true, // given by the user
		"http://evil.example":                   false,
		"https://app.foxglove.dev.evil.example": false,
		"http://127.0.0.1:9999":                 false, // another origin on the machine
		"null":                                  false,
		"::":                                    false,
	} {
		err := CheckWebSocketOrigin(up(origin), false, []string{"https://partner.example/"})
		if ok != (err == nil) {
			t.Errorf("Origin %q: %v, want allowed %v", origin, err, ok)
		}
	}
	if err := CheckWebSocketOrigin(up("http://evil.example"), true, nil); err != nil {
		t.Errorf("a request with the token in its URL was refused: %v", err)
	}
}
