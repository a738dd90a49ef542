"""The courtyard as a room: listener seats, panning, distance, the reflecting surfaces (image
sources) and the diffuse tail."""
