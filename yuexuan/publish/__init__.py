"""Published outputs of the Timeline: the courtyard drawing, the audio guide and the score."""
