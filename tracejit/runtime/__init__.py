"""Runtime: jit's cache and dispatch, AOT stages, executables, the device model."""
