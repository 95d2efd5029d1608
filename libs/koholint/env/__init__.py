"""The Gymnasium environment, its encoding, vector env, wrappers, RND, the archive, export."""
