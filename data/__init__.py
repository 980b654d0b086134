"""Data for battles: importers that turn real-world sources into simulator inputs."""
