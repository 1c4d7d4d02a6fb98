package orchestrate

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// shellWords are the shell builtins and keywords a command may start with;
// CheckCommand looks past the ones that run another program (exec, env,
// nice, ...) and does not check the others.
var shellWords = map[string]bool{
	"if": true, "for": true, "while": true, "until": true, "case": true, "{": true, "(": true,
	"cd": true, "echo": true, "printf": true, "set": true, "export": true, "test": true, "[": true,
	"true": true, "false": true, ".": true, ":": true, "eval": true, "trap": true, "read": true,
	"exit": true, "wait": true, "ulimit": true, "umask": true, "!": true,
}

// wrappers run the program named by the first word after their options
// and numeric arguments.
var wrappers = map[string]bool{"exec": true, "env": true, "nice": true, "nohup": true, "setsid": true, "timeout": true,
	"stdbuf": true, "taskset": true, "chrt": true}

// wrapperArg matches what wrappers take before the program: options, and
// numbers or durations (nice -n 5, timeout 30s, chrt -f 10, taskset 0x3).
var wrapperArg = regexp.MustCompile(`^(-.*|[0-9][0-9a-fA-Fx.,]*[smhd]?)$`)

// CheckCommand finds the program a command line starts with, the way
// /bin/sh would inside a namespace (the namespaces share skyloop's files
// and PATH), so that a misspelt program is reported before anything is
// set up. Lines it cannot judge without running a shell (variables,
// substitutions, builtins) pass.
func CheckCommand(command, dir string) error {
	words := strings.Fields(command)
	for len(words) > 0 {
		w := words[0]
		switch {
		case strings.ContainsAny(w, "$`'\"\\*?;&|<>()"):
			return nil
		case wrappers[w]:
			words = words[1:]
			for len(words) > 1 && wrapperArg.MatchString(words[0]) {
				words = words[1:]
			}
			continue
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "="):
			words = words[1:] // VAR=value prefix
			continue
		case shellWords[w]:
			return nil
		}
		break
	}
	if len(words) == 0 {
		return nil
	}
	prog := words[0]
	if strings.Contains(prog, "/") {
		path := prog
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("%s: no such program (looked in %s)", prog, filepath.Dir(path))
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s: not an executable file", prog)
		}
		return nil
	}
	if _, err := exec.LookPath(prog); err != nil {
		return fmt.Errorf("%s: command not found in PATH (%s)", prog, os.Getenv("PATH"))
	}
	return nil
}
