"""The compiler: jaxpr passes, then fusion decisions that the backend turns into native loops."""
