from utils import old_name

print(old_name())
