"""console: the web page people watch — every env live on the world map, one env's frames, runs
with start/stop and checkpoints, the fleet's health — fed by koholint.positions and the services'
own APIs."""
