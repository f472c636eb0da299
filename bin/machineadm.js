#!/usr/bin/env node
// Runs machineadm from source (Node 24 strips the TypeScript types itself).
import '../src/cli/bin.ts';
