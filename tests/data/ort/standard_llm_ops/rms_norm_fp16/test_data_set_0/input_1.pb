
BscaleJ􌽉U恳8�8醪?88: