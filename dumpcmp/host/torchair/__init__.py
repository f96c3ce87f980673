"""TorchAir mode: GE dumps compared with FX npy dumps (or a fusion-off GE dump), formats.md §7."""
