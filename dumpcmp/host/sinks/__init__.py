"""Result writers. Numbers are formatted here and nowhere else."""
