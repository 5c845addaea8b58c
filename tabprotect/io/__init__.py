"""File formats: job specs (TOML), tau-Argus JJ and .hrc, cells + relations CSV pairs."""
