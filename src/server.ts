#!/usr/bin/env node
/** The command-line entry: `node dist/server.js [command] [options]` (see `--help`). */
import { runCommandLine } from './cli/main.js';

runCommandLine(process.argv.slice(2));
