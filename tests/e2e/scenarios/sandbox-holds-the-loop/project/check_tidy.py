print("tidy")
