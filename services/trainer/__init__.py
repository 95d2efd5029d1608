"""trainer: RLlib PPO on koholint/Zelda-v0 with curiosity, a Go-Explore archive and episode export."""
