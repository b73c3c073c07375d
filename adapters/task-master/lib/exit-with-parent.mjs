// Preloaded (`node --import`) into the Task Master MCP server this adapter starts, so that
// the server ends when the adapter does. The server keeps running after its stdin closes,
// and an adapter killed with SIGKILL (as taskproof does on purpose) cannot stop it; without
// this, every killed adapter would leave a server behind. Task Master's code is not touched:
// this only watches the parent process id, which changes when the parent dies.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 500).unref();
