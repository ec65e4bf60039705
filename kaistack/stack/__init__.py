"""One load path: a stack (file or Pulumi config) turned into the resolved, validated model every command uses."""
