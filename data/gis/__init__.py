"""Geographic data: real terrain (SRTM elevation, OpenStreetMap features) for battle sites."""
