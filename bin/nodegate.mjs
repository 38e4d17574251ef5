#!/usr/bin/env -S node --initial-old-space-size=128
// The nodegate command: runs the TypeScript sources through tsx (no build step). The V8 flag is
// why: see "Heap headroom" in README.md (Node takes it on the command line only, not in NODE_OPTIONS).
import { register } from "tsx/esm/api";

register();
await import("../src/main.ts");
