package view

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReplaySendsABoundedRun: a run larger than what run.json may hold
// (the caps lowered to 12 samples and 4 network events) is sent as every
// 3rd sample of each vehicle and every 3rd network event, numbers rounded
// to the millimetre, and vehicle.json gives a vehicle's every sample; a
// bad id is refused. On the code before, run.json held every row.
func TestReplaySendsABoundedRun(t *testing.T) {
	old := sentLimits
	defer func() { sentLimits = old }()
	sentLimits.samples, sentLimits.net = 12, 4
	var rows strings.Builder
	rows.WriteString(goodRun["vehicles.csv"][:strings.Index(goodRun["vehicles.csv"], "\n")+1])
	for k := range 10 { // 10 samples of each of the two vehicles
		for id := range 2 {
			fmt.Fprintf(&rows, "%d,%d,%d.12345,0,10,0,0,0,0,0,0,goto,1,0,12.6,0,101325\n", k*500_000_000, id, k)
		}
	}
	var trace strings.Builder
	trace.WriteString("event,t_ns,src,dst,seq,t_gen_ns,bytes,kind,reason\n")
	for k := range 10 {
		fmt.Fprintf(&trace, "rx,%d,0,1,%d,1000,60,state,\n", 1000+k, k)
	}
	dir := writeRun(t, map[string]string{"vehicles.csv": rows.String(), "trace.csv": trace.String()})
	r, err := LoadReplay(dir)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := ReplayPages(r, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(pages)
	defer srv.Close()
	get := func(path string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Host = "127.0.0.1:0"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	code, b := get("/run.json")
	var doc struct {
		Samples      samples   `json:"samples"`
		SamplesEvery int       `json:"samples_every"`
		Net          netEvents `json:"net"`
		NetEvery     int       `json:"net_every"`
	}
	if code != http.StatusOK || json.Unmarshal(b, &doc) != nil {
		t.Fatalf("run.json: %d %.200s", code, b)
	}
	if doc.SamplesEvery != 2 || len(doc.Samples.T) != 10 || doc.NetEvery != 3 || len(doc.Net.T) != 4 {
		t.Errorf("run.json: every %d of the samples (%d sent), every %d of the events (%d sent); want 2 (10), 3 (4)",
			doc.SamplesEvery, len(doc.Samples.T), doc.NetEvery, len(doc.Net.T))
	}
	for i, id := range doc.Samples.ID {
		if want := float64(2*(i/2)) + 0.123; id != int32(i%2) || doc.Samples.X[i] != want {
			t.Errorf("sample %d: vehicle %d at x %v, want vehicle %d at %v", i, id, doc.Samples.X[i], i%2, want)
		}
	}
	code, b = get("/vehicle.json?id=1")
	var full samples
	if code != http.StatusOK || json.Unmarshal(b, &full) != nil {
		t.Fatalf("vehicle.json: %d %.200s", code, b)
	}
	if len(full.T) != 10 || full.T[9] != 4.5 || full.ID[9] != 1 {
		t.Errorf("vehicle.json?id=1: %d samples, the last %v s of vehicle %v; want 10, 4.5 s, 1", len(full.T), full.T, full.ID)
	}
	for _, q := range []string{"id=2", "id=-1", "id=x", ""} {
		if code, _ := get("/vehicle.json?" + q); code != http.StatusBadRequest {
			t.Errorf("vehicle.json?%s: %d, want 400", q, code)
		}
	}
}
