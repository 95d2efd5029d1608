"""trainer: RLlib PPO on koholint/Zelda-v1 with curiosity, a Go-Explore archive and episode export."""
