package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/gate"
	"github.com/mcpwrap/mcpwrap/internal/policy"
)

// policyFor returns the operator policy of server name from the config
// file (file, or fileErr when it could not be used) and the run's
// allow-list. A config file that cannot be used fails closed, visibly:
// every tool is locked as disabled_unknown with the error as the reason, so
// the session still starts and the agent learns what to fix.
func policyFor(file *config.File, fileErr error, name string, allow policy.AllowList, logger *slog.Logger) *policy.Evaluator {
	if fileErr == nil {
		srv := file.Server(name)
		eval, err := policy.NewEvaluator(policy.Options{
			ServerDisabled: !srv.Enabled,
			Rules:          srv.Tools,
			Allow:          allow,
			Approval:       srv.Approval,
		})
		if err == nil {
			return eval
		}
		path := "the config file"
		if file != nil {
			path = file.Path
		}
		fileErr = fmt.Errorf("%s: servers.%s: %w", path, name, err)
	}
	logger.Error("the config file has an error; no tool is callable until it is fixed", "error", fileErr)
	eval, _ := policy.NewEvaluator(policy.Options{Allow: allow, ConfigErr: fileErr}) // cannot fail
	return eval
}

// watchConfig follows the config file of the wrap command o: whenever it
// changes, the gate gets the server's new operator policy and, if it
// differs, onChange runs (to re-evaluate what the client sees, which sends
// tools/list_changed). Fixing a broken file this way brings the tools back;
// breaking it locks them again. Only what decides tool availability
// (enabled, tools, approval) follows the file live: the other settings
// (env, retry, timeouts) apply at the next start.
// The returned stop ends the watch and waits for it.
func watchConfig(ctx context.Context, o wrapOptions, tools *gate.Gate, onChange func(), logger *slog.Logger) (stop func()) {
	path, err := config.ConfigPath(o.configPath, os.Getenv)
	if err != nil {
		return func() {}
	}
	allow, _ := policy.ParseAllowList(o.allowTools) // loadPolicy has checked it
	return goUntilStopped(ctx, func(ctx context.Context) {
		config.Watch(ctx, path, logger, func() {
			file, err := config.Open(o.configPath, os.Getenv)
			eval := policyFor(file, err, o.name, allow, logger)
			if tools.SetEvaluator(eval) {
				if eval.ConfigErr() == nil {
					logger.Info("config file reloaded", "path", path)
				}
				onChange()
			}
		})
	})
}
