"""What several agents share, by composition: a stream format two CLIs print, the walk of a saved
history document, the launch rules of a CLI and its fork. An agent module uses these; no agent
module imports another."""
