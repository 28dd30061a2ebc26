"""One run from configuration to verdict: `config` (RunConfig, validated once into a ValidRun), `runner` (Run:
set up, start the clients, judge), `summary` (the verdict as text and JSON), `sweep` (variants × thread counts),
`demos` (the recorded demos) and `walkthrough` (the seed's scenes, call by call). May import every engine
package below it (record, backends, patterns, clients, server's profile); never commands or the CLI.
"""
