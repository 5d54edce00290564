"""Native backends: kernel plans to machine code."""
