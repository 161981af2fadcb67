"""capreg's composition root: the `capreg` command, which wires the registry and the MCP
bridge together, and the offline work (evaluation, training) that drives the registry from
above."""
