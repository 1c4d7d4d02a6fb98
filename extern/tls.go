package extern

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"
)

// NewCertificate makes a self-signed TLS certificate for one run (ECDSA
// P-256, valid from an hour ago for a week) and returns it with its
// fingerprint, which clients pin instead of trusting an authority.
func NewCertificate() (tls.Certificate, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("making a TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("making a TLS certificate: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "skyloop run"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("making a TLS certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, Fingerprint(der), nil
}

// Fingerprint returns "sha256:" and the hex SHA-256 of a certificate's
// DER bytes.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ParseFingerprint checks a fingerprint as a user gives it ("sha256:" and
// 64 hex digits; the prefix, colons and case are optional) and returns it
// as Fingerprint writes it.
func ParseFingerprint(s string) (string, error) {
	h := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(s), "sha256:"))
	h = strings.ReplaceAll(h, ":", "")
	if b, err := hex.DecodeString(h); err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("certificate fingerprint %q: want sha256: and 64 hex digits, as skyloop prints it", s)
	}
	return "sha256:" + h, nil
}

// ServerTLS returns the TLS configuration of a listener with cert.
func ServerTLS(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
}

// ClientTLS returns a TLS configuration that accepts exactly the server
// certificate with this fingerprint (a run's self-signed certificate).
func ClientTLS(fingerprint string) (*tls.Config, error) {
	want, err := ParseFingerprint(fingerprint)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// The chain is checked below against the pinned fingerprint,
		// not against authorities: a run's certificate is self-signed.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server sent no certificate")
			}
			if got := Fingerprint(cs.PeerCertificates[0].Raw); got != want {
				return fmt.Errorf("the server's certificate is %s, not the %s given: wrong address, an older run, or someone in between", got, want)
			}
			return nil
		},
	}, nil
}

// Dial connects to a skyloop server or relay at addr: over TLS pinned to
// fingerprint when one is given, over plain TCP otherwise, which only a
// loopback address may use (the token would cross the network in clear).
func Dial(addr, fingerprint string, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	if fingerprint == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("address %q: %w", addr, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("%s is not a loopback address: give the certificate fingerprint skyloop printed (TLS)", addr)
		}
		return d.Dial("tcp", addr)
	}
	cfg, err := ClientTLS(fingerprint)
	if err != nil {
		return nil, err
	}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return nil, fmt.Errorf("TLS to %s: %w", addr, err)
	}
	return c, nil
}
