"""Play a battle in the browser: a person commands Blue against any Red commander."""
