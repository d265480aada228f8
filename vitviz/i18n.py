"""Every sentence a user sees, in English and Korean.

Keys are grouped by page. ``t(key, lang, **values)`` formats one; a missing key or language is
a test failure, never a blank on screen. Technical names (Conv2d, [CLS], softmax, GELU) stay in
English in both languages, as Korean ML courses write them.
"""

from __future__ import annotations

LANGUAGES = {"en": "English", "ko": "한국어"}
DEFAULT_LANGUAGE = "en"

TEXT: dict[str, dict[str, str]] = {
    # ---- shared: sidebar, navigation, messages --------------------------------------------
    "app.title": {"en": "vitviz: inside a Vision Transformer", "ko": "vitviz: Vision Transformer 들여다보기"},
    "sidebar.language": {"en": "Language", "ko": "언어"},
    "sidebar.model": {"en": "Model", "ko": "모델"},
    "sidebar.model_help": {
        "en": "Models marked 'download' need the network the first time.",
        "ko": "'다운로드' 표시가 있는 모델은 처음 한 번 네트워크가 필요합니다.",
    },
    "sidebar.custom_model": {"en": "Other model (timm:, hf: or a path)", "ko": "다른 모델 (timm:, hf: 또는 경로)"},
    "sidebar.custom_in_use": {
        "en": "This model is in use instead of the list above; clear the box to go back to the list.",
        "ko": "위 목록 대신 이 모델을 쓰고 있습니다. 칸을 비우면 목록의 모델로 돌아갑니다.",
    },
    "verdict.legend_right": {"en": "green: the true class", "ko": "초록색: 정답 클래스"},
    "verdict.legend_wrong": {
        "en": "red: the answer, green: the true class",
        "ko": "빨간색: 모델의 답, 초록색: 정답 클래스",
    },
    "verdict.right": {
        "en": "Right. True class (CIFAR-10 test set): **{truth}**; the model says **{pred}** with {p}.",
        "ko": "맞혔습니다. 정답 클래스 (CIFAR-10 테스트 세트): **{truth}**, 모델의 답: **{pred}** ({p}).",
    },
    "verdict.wrong": {
        "en": "Wrong. True class (CIFAR-10 test set): **{truth}**; the model says **{pred}**. "
        "The true class ranks {rank} of {n}, with {p}.",
        "ko": "틀렸습니다. 정답 클래스 (CIFAR-10 테스트 세트): **{truth}**, 모델의 답: **{pred}**. "
        "정답 클래스는 {n}개 중 {rank}위이고 확률은 {p}입니다.",
    },
    "sidebar.image": {"en": "Image", "ko": "이미지"},
    "sidebar.source": {"en": "Source", "ko": "가져올 곳"},
    "sidebar.upload_kept": {
        "en": "In use: your upload {name}. Choose another file or source to change it.",
        "ko": "사용 중: 업로드한 {name}. 바꾸려면 다른 파일이나 가져올 곳을 고르세요.",
    },
    "present.toggle": {"en": "Presenter mode", "ko": "발표 모드"},
    "present.help": {
        "en": "For a projector: hides this sidebar, enlarges the page, and → / PageDown (or a clicker) go to the next step, ← / PageUp back; Escape leaves. A link with ?present=1 opens in this mode.",
        "ko": "프로젝터용: 이 사이드바를 숨기고 화면을 키웁니다. → / PageDown (또는 발표용 리모컨)으로 다음 단계, ← / PageUp으로 이전 단계로 갑니다. Esc로 나옵니다. ?present=1 링크는 이 모드로 열립니다.",
    },
    "present.leave": {"en": "Leave presenter mode", "ko": "발표 모드 끝내기"},
    "present.leave_help": {
        "en": "Shows the sidebar again (Escape does the same).",
        "ko": "사이드바를 다시 보여 줍니다 (Esc 키도 같습니다).",
    },
    "sidebar.source.sample": {"en": "Sample photo", "ko": "예제 사진"},
    "sidebar.source.upload": {"en": "Upload", "ko": "업로드"},
    "sidebar.source.cifar": {"en": "CIFAR-10 test image", "ko": "CIFAR-10 테스트 이미지"},
    "sidebar.sample": {"en": "Photo", "ko": "사진"},
    "sidebar.upload": {"en": "Upload an image", "ko": "이미지 업로드"},
    "sidebar.no_image": {
        "en": "Choose an image in the sidebar: upload one, or pick a sample photo.",
        "ko": "사이드바에서 이미지를 고르세요. 직접 올리거나 예제 사진을 선택할 수 있습니다.",
    },
    "sidebar.upload_limit": {
        "en": "Up to {limit} MB; nothing you upload is stored.",
        "ko": "{limit} MB까지 올릴 수 있고, 올린 파일은 저장되지 않습니다.",
    },
    "sidebar.cifar_class": {"en": "Class", "ko": "클래스"},
    "sidebar.cifar_index": {"en": "Index within the class", "ko": "클래스 안의 번호"},
    "sidebar.cifar_random": {"en": "Random test image", "ko": "무작위 테스트 이미지"},
    "sidebar.no_cifar": {
        "en": "No CIFAR-10 folder found: set VITVIZ_DATA to an ImageFolder copy of CIFAR-10 to browse it.",
        "ko": "CIFAR-10 폴더가 없습니다. CIFAR-10 ImageFolder 사본을 VITVIZ_DATA로 지정하면 볼 수 있습니다.",
    },
    "sidebar.device": {"en": "Running on", "ko": "실행 장치"},
    "sidebar.device_cpu": {"en": "CPU ({threads} threads)", "ko": "CPU (스레드 {threads}개)"},
    "data.cifar10_jpeg": {"en": "CIFAR-10 (JPEG copy)", "ko": "CIFAR-10 (JPEG 사본)"},
    "data.cifar10_folder": {"en": "CIFAR-10 (image folder)", "ko": "CIFAR-10 (이미지 폴더)"},
    "sidebar.untrained": {
        "en": "This model has random weights: its attention and predictions show the mechanics, not learned behaviour.",
        "ko": "이 모델은 무작위 가중치입니다. 어텐션과 예측은 작동 방식만 보여 줄 뿐, 학습된 행동이 아닙니다.",
    },
    "nav.tour": {"en": "The tour", "ko": "단계별 둘러보기"},
    "nav.lab": {"en": "Lab", "ko": "실험실"},
    "nav.previous": {"en": "Previous", "ko": "이전"},
    "nav.next": {"en": "Next", "ko": "다음"},
    "nav.step": {"en": "Step {index} of {total}", "ko": "{total}단계 중 {index}단계"},
    "shape.label": {"en": "Tensor at this step", "ko": "이 단계의 텐서"},
    "download.csv": {"en": "Download the data (CSV)", "ko": "데이터 내려받기 (CSV)"},
    "download.npz": {"en": "Download the arrays (NPZ)", "ko": "배열 내려받기 (NPZ)"},
    "error.model": {"en": "The model could not be loaded: {message}", "ko": "모델을 불러오지 못했습니다: {message}"},
    "error.upload_too_large": {
        "en": "The file is larger than the {limit} MB upload limit: resize or compress it and try again.",
        "ko": "파일이 업로드 한도 {limit} MB보다 큽니다. 크기를 줄이거나 압축해서 다시 올려 주세요.",
    },
    "note.image": {"en": "Note: {message}", "ko": "참고: {message}"},
    # ---- images a user gives (vitviz.data.load_image) ----------------------------------------
    "image.empty": {
        "en": "The file is empty: choose an image file such as a JPEG or PNG.",
        "ko": "빈 파일입니다. JPEG나 PNG 같은 이미지 파일을 골라 주세요.",
    },
    "image.unknown": {
        "en": "This file is not an image that can be read: upload a JPEG, PNG, WebP, GIF, BMP or TIFF.",
        "ko": "읽을 수 있는 이미지 파일이 아닙니다. JPEG, PNG, WebP, GIF, BMP, TIFF 파일을 올려 주세요.",
    },
    "image.damaged": {
        "en": "The image file is damaged or incomplete: open it in an image viewer, save it again, and upload the new file.",
        "ko": "이미지 파일이 손상되었거나 일부가 잘렸습니다. 이미지 뷰어로 열어 다시 저장한 뒤 새 파일을 올려 주세요.",
    },
    "image.too_large": {
        "en": "The image is {width}x{height} pixels ({megapixels} megapixels), over the limit of {limit} megapixels: resize it and upload it again.",
        "ko": "이미지가 {width}x{height} 픽셀({megapixels} 메가픽셀)로 한도 {limit} 메가픽셀을 넘습니다. 크기를 줄여 다시 올려 주세요.",
    },
    "image.bomb": {
        "en": "The image is too large to open safely (over {limit} megapixels): resize it and upload it again.",
        "ko": "이미지가 너무 커서 안전하게 열 수 없습니다({limit} 메가픽셀 초과). 크기를 줄여 다시 올려 주세요.",
    },
    "image.no_pixels": {
        "en": "The image has no pixels: choose another file.",
        "ko": "이미지에 픽셀이 없습니다. 다른 파일을 골라 주세요.",
    },
    "image.colour": {
        "en": "The image's colour format could not be converted to RGB: save it as a JPEG or PNG and try again.",
        "ko": "이미지의 색 형식을 RGB로 바꿀 수 없습니다. JPEG나 PNG로 저장해서 다시 시도해 주세요.",
    },
    "image.note.animated": {
        "en": "This is an animated image with {frames} frames; the first frame is shown.",
        "ko": "프레임이 {frames}개인 움직이는 이미지입니다. 첫 프레임을 보여 줍니다.",
    },
    "image.note.exif": {
        "en": "The photo's orientation tag could not be read, so it is shown as stored.",
        "ko": "사진의 방향 정보를 읽을 수 없어 저장된 그대로 보여 줍니다.",
    },
    "image.note.transparent": {
        "en": "Transparent areas are shown on a white background.",
        "ko": "투명한 부분은 흰 배경 위에 보여 줍니다.",
    },
    # ---- models a user names (vitviz.zoo.load) -----------------------------------------------
    "model.unknown": {
        "en": "There is no model called {name}: use one of {names}, timm:<model name>, hf:<repo id>, or the path of a checkpoint.",
        "ko": "{name}(이)라는 모델이 없습니다. {names} 중 하나나 timm:<모델 이름>, hf:<저장소 id>, 또는 체크포인트 경로를 쓰세요.",
    },
    "model.offline": {
        "en": "{what} could not be downloaded ({error}), probably because there is no network: models that work offline are {names}, or the path of a checkpoint file.",
        "ko": "{what}을(를) 내려받지 못했습니다({error}). 네트워크가 없는 것 같습니다. 오프라인에서 쓸 수 있는 모델은 {names}, 또는 체크포인트 파일 경로입니다.",
    },
    "model.timm_unknown": {
        "en": "timm has no model called {name}: check the name with timm.list_models().",
        "ko": "timm에 {name}(이)라는 모델이 없습니다. timm.list_models()로 이름을 확인하세요.",
    },
    "model.timm_failed": {
        "en": "timm could not load {name} ({error}).",
        "ko": "timm이 {name}을(를) 불러오지 못했습니다({error}).",
    },
    "model.unsupported": {
        "en": "{name} cannot be shown by vitviz: {error}",
        "ko": "vitviz는 {name}을(를) 보여 줄 수 없습니다: {error}",
    },
    "model.not_vit": {
        "en": "{name} is a {kind} model; vitviz shows ViT models (model_type 'vit').",
        "ko": "{name}은(는) {kind} 모델입니다. vitviz는 ViT 모델(model_type 'vit')만 보여 줍니다.",
    },
    "model.hf_failed": {
        "en": "Hugging Face could not load {name} ({error}).",
        "ko": "Hugging Face가 {name}을(를) 불러오지 못했습니다({error}).",
    },
    "model.bad_safetensors": {
        "en": "{file} is not a valid safetensors file ({error}).",
        "ko": "{file}은(는) 올바른 safetensors 파일이 아닙니다({error}).",
    },
    "model.pickle_refused": {
        "en": "{file} holds Python objects besides tensors, which could run code when loaded, so it was refused: save a plain state dict (or safetensors) and try again.",
        "ko": "{file}에는 텐서 말고도 파이썬 객체가 들어 있어 불러올 때 코드가 실행될 수 있으므로 거부했습니다. 순수한 state dict(또는 safetensors)로 저장해서 다시 시도하세요.",
    },
    "model.not_checkpoint": {
        "en": "{file} is not a checkpoint that torch can read ({error}).",
        "ko": "{file}은(는) torch가 읽을 수 있는 체크포인트가 아닙니다({error}).",
    },
    "model.no_state_dict": {
        "en": "{file} does not hold a state dict of tensors.",
        "ko": "{file}에는 텐서로 된 state dict가 없습니다.",
    },
    "model.folder_without_config": {
        "en": "{file} is a folder without a config.json: point at a checkpoint file or a Hugging Face model folder.",
        "ko": "{file}은(는) config.json이 없는 폴더입니다. 체크포인트 파일이나 Hugging Face 모델 폴더를 지정하세요.",
    },
    "model.hf_needs_config": {
        "en": "{file} looks like a Hugging Face checkpoint: put its config.json beside it.",
        "ko": "{file}은(는) Hugging Face 체크포인트로 보입니다. 옆에 config.json을 두세요.",
    },
    "model.mismatch": {
        "en": "{file} does not match its config: {error}",
        "ko": "{file}이(가) 설정과 맞지 않습니다: {error}",
    },
    "model.load_failed": {
        "en": "{file} could not be loaded: {error}",
        "ko": "{file}을(를) 불러오지 못했습니다: {error}",
    },
    # ---- the model registry (vitviz.zoo): titles in the sidebar, descriptions on the card ----
    "zoo.cifar10-vit.title": {
        "en": "CIFAR-10 ViT (shipped, {accuracy} test)",
        "ko": "CIFAR-10 ViT (기본 제공, 테스트 {accuracy})",
    },
    "zoo.cifar10-vit.about": {
        "en": "A ViT this project trained from scratch on CIFAR-10 (JPEG copy); 32x32 inputs, 4x4 patches.",
        "ko": "이 프로젝트가 CIFAR-10 (JPEG 사본)으로 처음부터 학습한 ViT입니다. 입력 32x32, 패치 4x4.",
    },
    "zoo.cifar10-cnn.title": {
        "en": "CIFAR-10 CNN (shipped, {accuracy} test)",
        "ko": "CIFAR-10 CNN (기본 제공, 테스트 {accuracy})",
    },
    "zoo.cifar10-cnn.about": {
        "en": "A small CNN (widths 64/256/256, as in cifar10-airbench) this project trained on CIFAR-10 (JPEG copy): the ViT's counterpart and teacher.",
        "ko": "이 프로젝트가 CIFAR-10 (JPEG 사본)으로 학습한 작은 CNN입니다 (채널 64/256/256, cifar10-airbench와 같은 구조). ViT와 비교하는 모델이자 ViT의 교사입니다.",
    },
    "zoo.untrained-cifar10-vit.title": {
        "en": "CIFAR-10 ViT, untrained (random weights)",
        "ko": "CIFAR-10 ViT, 학습 전 (무작위 가중치)",
    },
    "zoo.untrained-cifar10-vit.about": {
        "en": "The shipped architecture with random weights (seed 0): its predictions mean nothing.",
        "ko": "기본 모델과 같은 구조에 무작위 가중치(seed 0)를 넣은 모델입니다. 예측에는 의미가 없습니다.",
    },
    "zoo.untrained-vit-b16.title": {
        "en": "ViT-B/16, untrained (random weights)",
        "ko": "ViT-B/16, 학습 전 (무작위 가중치)",
    },
    "zoo.untrained-vit-b16.about": {
        "en": "ViT-B/16 at 224 px with random weights (seed 0), for shapes and speed.",
        "ko": "224 px ViT-B/16에 무작위 가중치(seed 0)를 넣은 모델로, 텐서 모양과 속도를 볼 때 씁니다.",
    },
    "zoo.untrained-vit-r26-s32.title": {
        "en": "R26+ViT-S/32 hybrid, untrained (random weights)",
        "ko": "R26+ViT-S/32 하이브리드, 학습 전 (무작위 가중치)",
    },
    "zoo.untrained-vit-r26-s32.about": {
        "en": "timm's hybrid layout at 224 px with random weights (seed 0): a ResNet-26 makes a 7x7 map of 2048 channels, each cell a token. For shapes.",
        "ko": "224 px의 timm 하이브리드 구조에 무작위 가중치(seed 0)를 넣은 모델입니다. ResNet-26이 채널 2048개의 7x7 맵을 만들고, 칸 하나가 토큰 하나입니다. 텐서 모양을 볼 때 씁니다.",
    },
    "zoo.timm:vit_small_r26_s32_224.augreg_in21k_ft_in1k.title": {
        "en": "R26+ViT-S/32 hybrid, ImageNet-21k -> 1k (timm, download)",
        "ko": "R26+ViT-S/32 하이브리드, ImageNet-21k -> 1k (timm, 다운로드)",
    },
    "zoo.timm:vit_small_r26_s32_224.augreg_in21k_ft_in1k.about": {
        "en": "timm's hybrid (AugReg): a ResNet-26 stem turns the image into a 7x7 feature map whose cells are the tokens of a ViT-S.",
        "ko": "timm의 하이브리드 모델(AugReg)입니다. ResNet-26 줄기가 이미지를 7x7 특징 맵으로 바꾸고, 그 칸들이 ViT-S의 토큰이 됩니다.",
    },
    "zoo.timm:vit_base_patch16_224.augreg2_in21k_ft_in1k.title": {
        "en": "ViT-B/16, ImageNet-21k -> 1k (timm, download)",
        "ko": "ViT-B/16, ImageNet-21k -> 1k (timm, 다운로드)",
    },
    "zoo.timm:vit_base_patch16_224.augreg2_in21k_ft_in1k.about": {
        "en": "timm's ViT-B/16 (AugReg 2), pre-trained on ImageNet-21k and fine-tuned on ImageNet-1k.",
        "ko": "timm의 ViT-B/16 (AugReg 2)입니다. ImageNet-21k로 사전 학습하고 ImageNet-1k로 미세 조정했습니다.",
    },
    "zoo.timm:vit_small_patch16_224.augreg_in21k_ft_in1k.title": {
        "en": "ViT-S/16, ImageNet-21k -> 1k (timm, download)",
        "ko": "ViT-S/16, ImageNet-21k -> 1k (timm, 다운로드)",
    },
    "zoo.timm:vit_small_patch16_224.augreg_in21k_ft_in1k.about": {
        "en": "timm's ViT-S/16 (AugReg), pre-trained on ImageNet-21k and fine-tuned on ImageNet-1k.",
        "ko": "timm의 ViT-S/16 (AugReg)입니다. ImageNet-21k로 사전 학습하고 ImageNet-1k로 미세 조정했습니다.",
    },
    "zoo.timm:deit_tiny_patch16_224.title": {
        "en": "DeiT-Ti/16, ImageNet-1k (timm, download)",
        "ko": "DeiT-Ti/16, ImageNet-1k (timm, 다운로드)",
    },
    "zoo.timm:deit_tiny_patch16_224.about": {
        "en": "Facebook's DeiT-Tiny (a ViT-Ti/16) trained on ImageNet-1k only.",
        "ko": "Facebook의 DeiT-Tiny (ViT-Ti/16)로, ImageNet-1k만으로 학습했습니다.",
    },
    "zoo.hf:google/vit-base-patch16-224.title": {
        "en": "ViT-B/16, ImageNet-21k -> 1k (Hugging Face, download)",
        "ko": "ViT-B/16, ImageNet-21k -> 1k (Hugging Face, 다운로드)",
    },
    "zoo.hf:google/vit-base-patch16-224.about": {
        "en": "Google's ViT-B/16 from the paper, through Hugging Face transformers.",
        "ko": "논문의 Google ViT-B/16을 Hugging Face transformers로 불러옵니다.",
    },
    # ---- page titles (navigation) -----------------------------------------------------------
    "page.home": {"en": "Overview", "ko": "전체 흐름"},
    "page.input": {"en": "1. Image to input", "ko": "1. 이미지에서 입력으로"},
    "page.patches": {"en": "2. Patches", "ko": "2. 패치"},
    "page.vectors": {"en": "3. Patch vectors", "ko": "3. 패치 벡터"},
    "page.tokens": {"en": "4. [CLS] and positions", "ko": "4. [CLS]와 위치 임베딩"},
    "page.attention": {"en": "5. Attention", "ko": "5. 어텐션"},
    "page.block": {"en": "6. Encoder block", "ko": "6. 인코더 블록"},
    "page.prediction": {"en": "7. Prediction", "ko": "7. 예측"},
    "page.compare": {"en": "8. ViT vs CNN", "ko": "8. ViT와 CNN"},
    "page.card": {"en": "9. Model card", "ko": "9. 모델 카드"},
    "page.mistakes": {"en": "Misclassification lab", "ko": "오분류 실험실"},
    # ---- home ------------------------------------------------------------------------------
    "home.intro": {
        "en": (
            "A Vision Transformer reads an image the way a language model reads a sentence: it cuts the "
            "image into square patches, turns every patch into a vector (a token), adds a [CLS] token and "
            "the position of every patch, and lets all tokens exchange information through layers of "
            "self-attention. The [CLS] token's final vector becomes the prediction. Follow the steps "
            "in the menu, or press Next."
        ),
        "ko": (
            "Vision Transformer는 언어 모델이 문장을 읽듯이 이미지를 읽습니다. 이미지를 정사각형 패치로 자르고, "
            "각 패치를 벡터(토큰)로 바꾸고, [CLS] 토큰과 각 패치의 위치 정보를 더한 뒤, 여러 층의 self-attention으로 "
            "모든 토큰이 정보를 주고받게 합니다. 마지막 [CLS] 토큰의 벡터가 예측이 됩니다. 메뉴의 단계를 따라가거나 "
            "'다음'을 누르세요."
        ),
    },
    "home.pipeline": {
        "en": "The whole forward pass, with the shapes for this model",
        "ko": "이 모델의 전체 순전파와 텐서 모양",
    },
    "home.prediction": {"en": "Prediction", "ko": "예측"},
    "home.col.step": {"en": "Step", "ko": "단계"},
    "home.col.shape": {"en": "Shape", "ko": "모양"},
    "home.col.meaning": {"en": "What it is", "ko": "의미"},
    "home.step.input": {"en": "The image, resized, cropped and normalised", "ko": "크기를 맞추고 잘라 정규화한 이미지"},
    "home.step.backbone": {
        "en": "A hybrid's ResNet: the image becomes a small map of many channels (each cell sees a wide region)",
        "ko": "하이브리드 모델의 ResNet: 이미지가 채널이 많은 작은 특징 맵이 됨 (각 칸이 넓은 영역을 봄)",
    },
    "home.step.conv": {
        "en": "Every P x P patch projected to D numbers at once (a strided convolution)",
        "ko": "모든 P x P 패치를 한 번에 D개의 숫자로 투영 (stride 합성곱)",
    },
    "home.step.patches": {
        "en": "The same patches as flat vectors of P*P*C pixel values",
        "ko": "같은 패치를 P*P*C개 픽셀 값의 벡터로 펼친 것",
    },
    "home.step.tokens": {"en": "N patch tokens of width D", "ko": "폭이 D인 N개의 패치 토큰"},
    "home.step.sequence": {
        "en": "[CLS] token prepended, position embeddings added: T tokens",
        "ko": "[CLS] 토큰을 앞에 붙이고 위치 임베딩을 더한 T개의 토큰",
    },
    "home.step.attention": {
        "en": "Per block: how much every token attends to every other, per head",
        "ko": "블록마다: 헤드별로 각 토큰이 다른 토큰에 주는 어텐션",
    },
    "home.step.block": {
        "en": "Tokens after every encoder block (the shape never changes)",
        "ko": "인코더 블록을 지난 토큰 (모양은 그대로)",
    },
    "home.step.pre_logits": {
        "en": "The [CLS] token (or the average token) after the final LayerNorm",
        "ko": "마지막 LayerNorm 뒤의 [CLS] 토큰 (또는 평균 토큰)",
    },
    "home.step.logits": {"en": "One score per class", "ko": "클래스마다 하나의 점수"},
    # ---- 1. input ----------------------------------------------------------------------------
    "input.intro": {
        "en": (
            "The model only accepts images of one size, scaled and centred the way it was trained. The photo is "
            "resized, cropped to the model's input size, turned into numbers between 0 and 1, and normalised "
            "per colour channel by subtracting the training mean and dividing by the standard deviation."
        ),
        "ko": (
            "모델은 학습할 때와 같은 크기와 방식으로 맞춘 이미지만 받습니다. 사진의 크기를 바꾸고 모델 입력 크기로 잘라낸 뒤, "
            "0과 1 사이의 숫자로 바꾸고, 색 채널마다 학습 데이터의 평균을 빼고 표준편차로 나누어 정규화합니다."
        ),
    },
    "input.original": {"en": "Original: {width} x {height} px", "ko": "원본: {width} x {height} 픽셀"},
    "input.resized": {
        "en": "Resized and cropped: {width} x {height} px",
        "ko": "크기 조정 후 자른 이미지: {width} x {height} 픽셀",
    },
    "input.recipe": {"en": "This model's preprocessing", "ko": "이 모델의 전처리"},
    "input.col.step": {"en": "Step", "ko": "단계"},
    "input.col.value": {"en": "Setting", "ko": "설정"},
    "input.channels": {"en": "The normalised input, channel by channel", "ko": "정규화된 입력 (채널별)"},
    "input.hist_before": {"en": "Pixel values in [0, 1]", "ko": "[0, 1] 범위의 픽셀 값"},
    "input.hist_after": {"en": "After normalisation (centred near 0)", "ko": "정규화 뒤 (0 근처에 모임)"},
    "input.hist_x_before": {"en": "pixel value / 255", "ko": "픽셀 값 / 255"},
    "input.hist_x_after": {"en": "normalised value (x - mean) / std", "ko": "정규화된 값 (x - mean) / std"},
    "input.hist_y": {"en": "number of pixels", "ko": "픽셀 수"},
    "input.normalised_channel": {"en": "{channel} normalised", "ko": "정규화된 {channel}"},
    "input.shorter_side": {"en": "{size} (shorter side)", "ko": "{size} (짧은 변)"},
    "input.step.resize": {"en": "resize", "ko": "크기 조정"},
    "input.step.crop": {"en": "center crop", "ko": "가운데 자르기"},
    "input.step.scale": {"en": "to [0, 1]", "ko": "[0, 1]로"},
    "input.step.scale_value": {"en": "pixel / 255", "ko": "픽셀 / 255"},
    "input.step.normalise": {"en": "normalise", "ko": "정규화"},
    # ---- 2. patches --------------------------------------------------------------------------
    "patches.intro": {
        "en": (
            "A Transformer reads a sequence, so the image is cut into non-overlapping P x P patches, read row by "
            "row like words in a sentence. An H x W image gives N = H W / P^2 patches, and each patch holds "
            "P x P x C numbers."
        ),
        "ko": (
            "Transformer는 시퀀스를 읽기 때문에, 이미지를 겹치지 않는 P x P 패치로 잘라 문장의 단어처럼 한 줄씩 읽습니다. "
            "H x W 이미지는 N = H W / P^2 개의 패치가 되고, 각 패치에는 P x P x C 개의 숫자가 들어 있습니다."
        ),
    },
    "patches.image_size": {"en": "Input size (H x W)", "ko": "입력 크기 (H x W)"},
    "patches.patch_size": {"en": "Patch size (P x P)", "ko": "패치 크기 (P x P)"},
    "patches.count": {"en": "Patches N", "ko": "패치 수 N"},
    "patches.vector": {"en": "Numbers per patch", "ko": "패치당 숫자 수"},
    "patches.tokens": {"en": "Tokens with [CLS]", "ko": "[CLS] 포함 토큰 수"},
    "patches.token_pixels": {"en": "Pixels per token", "ko": "토큰 하나가 맡은 픽셀"},
    "patches.feature_map": {"en": "ResNet feature map (C' x h x w)", "ko": "ResNet 특징 맵 (C' x h x w)"},
    "patches.hybrid": {
        "en": (
            "**A hybrid ViT.** This model does not cut the pixels into patches. A {resnet} first turns the "
            "{height} x {width} image into a feature map of shape {features} (channels, rows, columns); each token "
            "is a {p} x {p} cell of that map, {dim} numbers. A cell stands for the {s} x {s}-pixel square drawn "
            "below, but the ResNet's stacked convolutions let it see well beyond that square. This is the paper's "
            "hybrid architecture (section 3.1): the CNN brings locality, the transformer then mixes the cells."
        ),
        "ko": (
            "**하이브리드 ViT.** 이 모델은 픽셀을 패치로 자르지 않습니다. 먼저 {resnet}이 {height} x {width} 이미지를 "
            "모양이 {features} (채널, 행, 열)인 특징 맵으로 바꾸고, 토큰 하나는 그 맵의 {p} x {p} 칸, 숫자 {dim}개입니다. "
            "칸 하나는 아래에 그린 {s} x {s} 픽셀 정사각형을 맡지만, ResNet의 합성곱이 겹겹이 쌓여 있어 그 정사각형보다 훨씬 "
            "넓은 곳을 봅니다. 논문의 하이브리드 구조(3.1절)입니다. CNN이 지역성을 주고, 그 뒤에 Transformer가 칸들을 섞습니다."
        ),
    },
    "patches.hybrid_gallery": {"en": "The image squares behind the tokens", "ko": "토큰이 맡은 이미지 정사각형"},
    "patches.grid": {
        "en": "The patch grid (hover for the patch number)",
        "ko": "패치 격자 (마우스를 올리면 패치 번호)",
    },
    "patches.gallery": {"en": "The patches in reading order", "ko": "읽는 순서대로 놓은 패치"},
    "patches.concept": {"en": "Try it: how P changes the sequence", "ko": "직접 해 보기: P에 따라 달라지는 시퀀스"},
    "patches.concept_intro": {
        "en": "Choose an image size and a patch size. Smaller patches mean more tokens, and attention compares every pair of tokens.",
        "ko": "이미지 크기와 패치 크기를 골라 보세요. 패치가 작을수록 토큰이 많아지고, 어텐션은 모든 토큰 쌍을 비교합니다.",
    },
    "patches.concept_size": {"en": "Image size (pixels)", "ko": "이미지 크기 (픽셀)"},
    "patches.concept_p": {"en": "Patch size P", "ko": "패치 크기 P"},
    "patches.attention_cost": {
        "en": "{tokens} tokens make {pairs} attention scores per head in every layer.",
        "ko": "토큰 {tokens}개이면 층마다 헤드 하나에 어텐션 점수가 {pairs}개입니다.",
    },
    # ---- 3. vectors ----
    "vectors.intro": {
        "en": (
            "Every patch is flattened into one vector x_p of P·P·C numbers in (c p1 p2) order: first the P x P "
            "values of the red channel row by row, then green, then blue. One linear layer, a matrix W and a bias b, "
            "turns this vector into a token of D numbers. The same W and b are used for every patch."
        ),
        "ko": (
            "각 패치는 (c p1 p2) 순서로 P·P·C개의 숫자를 가진 벡터 x_p 하나로 펼쳐집니다. 먼저 빨강 채널의 P x P 값을 "
            "한 줄씩, 그다음 초록, 그다음 파랑 순서입니다. 하나의 선형 층(행렬 W와 편향 b)이 이 벡터를 D개의 숫자로 된 "
            "토큰으로 바꿉니다. 모든 패치에 같은 W와 b를 씁니다."
        ),
    },
    "vectors.hybrid": {
        "en": (
            "**A hybrid ViT.** Here x_p is not a patch of pixels: it is a {p} x {p} cell of the ResNet's feature map, "
            "{chans} channels, so {length} numbers, and that is what patch_embed.proj reads. The check further down "
            "(a Conv2d with kernel = stride = P is cutting into patches plus one Linear) holds on that map just as on pixels."
        ),
        "ko": (
            "**하이브리드 ViT.** 여기서 x_p는 픽셀 패치가 아니라 ResNet 특징 맵의 {p} x {p} 칸입니다. 채널이 {chans}개라 숫자는 "
            "{length}개이고, patch_embed.proj가 읽는 것이 바로 이것입니다. 아래의 확인(kernel = stride = P인 Conv2d는 패치 "
            "자르기와 Linear 하나와 같다)은 픽셀에서처럼 이 특징 맵에서도 성립합니다."
        ),
    },
    "vectors.hybrid_flat": {
        "en": "Patch {index}: the {length} numbers of its feature-map cell (x_p)",
        "ko": "패치 {index}: 특징 맵 칸의 숫자 {length}개 (x_p)",
    },
    "vectors.hybrid_axis": {"en": "channel of the ResNet feature map", "ko": "ResNet 특징 맵의 채널"},
    "vectors.filters_hybrid": {
        "en": (
            "patch_embed.proj reads the ResNet's {chans} channels, not pixels, so its filters are not pictures. "
            "The layer that looks at pixels is the ResNet's first convolution (patch_embed.backbone, 7x7)."
        ),
        "ko": (
            "patch_embed.proj는 픽셀이 아니라 ResNet의 채널 {chans}개를 읽으므로 필터가 그림이 아닙니다. "
            "픽셀을 보는 층은 ResNet의 첫 합성곱(patch_embed.backbone, 7x7)입니다."
        ),
    },
    "vectors.choose": {"en": "Patch (or click one on the image)", "ko": "패치 (이미지에서 클릭해도 됩니다)"},
    "vectors.patch_option": {"en": "patch {index} (row {row}, col {col})", "ko": "패치 {index} ({row}행, {col}열)"},
    "vectors.grid": {"en": "Click a patch to choose it", "ko": "패치를 클릭해 고르세요"},
    "vectors.planes": {
        "en": "Patch {index}: one {p} x {p} plane per channel",
        "ko": "패치 {index}: 채널마다 {p} x {p} 평면 하나",
    },
    "vectors.planes_note": {
        "en": "Normalised values, darker is lower. The number in a cell (or on hover) is its index in x_p.",
        "ko": "정규화된 값이며 어두울수록 작은 값입니다. 칸의 숫자(또는 마우스를 올렸을 때)는 x_p 안의 위치입니다.",
    },
    "vectors.flat": {
        "en": "The same numbers as one vector x_p of length {length}: index = c·{pp} + p1·{p} + p2",
        "ko": "같은 숫자를 길이 {length}인 벡터 x_p 하나로: 위치 = c·{pp} + p1·{p} + p2",
    },
    "vectors.index_axis": {
        "en": "index in x_p (where each channel starts)",
        "ko": "x_p 안의 위치 (각 채널이 시작하는 곳)",
    },
    "vectors.token": {"en": "Its token: W x_p + b, {dim} numbers", "ko": "이 패치의 토큰: W x_p + b, 숫자 {dim}개"},
    "vectors.token_axis": {"en": "channel of the token (D)", "ko": "토큰의 채널 (D)"},
    "vectors.formula_note": {
        "en": (
            "W has shape (D, P·P·C) = ({dim}, {length}): each of its {dim} rows is one filter, a {p} x {p} colour "
            "picture, and each number of the token is the dot product of one filter with the patch, plus its bias."
        ),
        "ko": (
            "W의 모양은 (D, P·P·C) = ({dim}, {length})입니다. {dim}개의 행 하나하나가 {p} x {p} 컬러 그림 같은 필터이고, "
            "토큰의 숫자 하나는 필터 하나와 패치의 내적에 편향을 더한 값입니다."
        ),
    },
    "vectors.formula_note_hybrid": {
        "en": (
            "W has shape (D, P·P·C') = ({dim}, {length}): each number of the token is the dot product of one row "
            "of W with the cell's {length} feature values, plus its bias."
        ),
        "ko": (
            "W의 모양은 (D, P·P·C') = ({dim}, {length})입니다. 토큰의 숫자 하나는 W의 행 하나와 그 칸의 특징 값 "
            "{length}개의 내적에 편향을 더한 값입니다."
        ),
    },
    "vectors.check": {
        "en": "Check on this image: the Conv2d is cutting patches plus one Linear",
        "ko": "이 이미지로 확인: Conv2d는 패치 자르기와 Linear 하나와 같습니다",
    },
    "vectors.check_intro": {
        "en": (
            "The model runs a Conv2d with kernel = stride = P. Five routes compute the tokens of this image with the "
            "model's own weight and bias; each is compared with the Conv2d, number by number."
        ),
        "ko": (
            "모델은 kernel = stride = P인 Conv2d를 실행합니다. 다섯 가지 방법으로 모델의 weight와 bias를 그대로 써서 "
            "이 이미지의 토큰을 계산하고, 각각을 Conv2d 결과와 숫자 하나하나 비교합니다."
        ),
    },
    "vectors.col.route": {"en": "Route", "ko": "방법"},
    "vectors.col.how": {"en": "How", "ko": "계산 방식"},
    "vectors.col.diff": {"en": "max |difference| from Conv2d", "ko": "Conv2d와의 최대 |차이|"},
    "vectors.route.conv2d": {
        "en": "Conv2d, kernel = stride = P (what the model runs)",
        "ko": "Conv2d, kernel = stride = P (모델이 실행하는 방식)",
    },
    "vectors.route.linear": {
        "en": "einops rearrange, then one Linear (the paper's x_p E)",
        "ko": "einops rearrange 뒤 Linear 하나 (논문의 x_p E)",
    },
    "vectors.route.unfold": {"en": "Tensor.unfold, then the same Linear", "ko": "Tensor.unfold 뒤 같은 Linear"},
    "vectors.route.view_permute": {
        "en": "view + permute + reshape, then the same Linear",
        "ko": "view + permute + reshape 뒤 같은 Linear",
    },
    "vectors.route.loop": {"en": "a plain loop, one patch at a time", "ko": "패치를 하나씩 도는 단순한 반복문"},
    "vectors.check_ok": {
        "en": "All routes agree: the largest difference is {diff}, below the tolerance {tol} (float32 rounding).",
        "ko": "모든 방법의 결과가 같습니다. 가장 큰 차이는 {diff}로 허용 오차 {tol}보다 작습니다 (float32 반올림 오차).",
    },
    "vectors.check_fail": {
        "en": "The routes disagree: the largest difference is {diff}, above the tolerance {tol}.",
        "ko": "결과가 다릅니다. 가장 큰 차이 {diff}가 허용 오차 {tol}보다 큽니다.",
    },
    "vectors.filters": {
        "en": "What the filters look like: the first {k} principal components of W (ViT paper, Fig. 7 left)",
        "ko": "필터의 모습: W의 첫 {k}개 주성분 (ViT 논문 Fig. 7 왼쪽)",
    },
    "vectors.filters_intro": {
        "en": (
            "Each row of W, reshaped to P x P x C, is a small colour picture. Principal component analysis finds the "
            "patterns the {dim} filters vary along most. Each tile is rescaled to its own range; its title is its "
            "share of the variance."
        ),
        "ko": (
            "W의 각 행을 P x P x C로 바꾸면 작은 컬러 그림이 됩니다. 주성분 분석은 {dim}개의 필터가 가장 크게 달라지는 "
            "패턴을 찾습니다. 타일마다 자기 범위로 다시 맞춰 그렸고, 제목은 그 성분이 설명하는 분산의 비율입니다."
        ),
    },
    "vectors.filters_untrained": {
        "en": (
            "This model is untrained: its filters are random numbers, so the components have no structure (noise, "
            "with almost equal shares of variance). A trained ViT shows smooth blobs, edges and stripes here."
        ),
        "ko": (
            "이 모델은 학습되지 않았습니다. 필터가 무작위 숫자라서 주성분에도 구조가 없습니다 (잡음, 분산 비율도 거의 같음). "
            "학습된 ViT에서는 여기서 부드러운 얼룩, 경계, 줄무늬가 보입니다."
        ),
    },
    "vectors.download_vector": {
        "en": "Download the patch vector and its token (NPZ)",
        "ko": "패치 벡터와 토큰 내려받기 (NPZ)",
    },
    "vectors.download_components": {"en": "Download the components (NPZ)", "ko": "주성분 내려받기 (NPZ)"},
    # (end of 3. vectors)
    # ---- 4. tokens ----
    "tokens.intro": {
        "en": (
            "Two things happen before the first encoder block. A learned [CLS] token is put in front of the N patch "
            "tokens; after the last block the classifier reads only this token. Then a position embedding is added "
            "to every token, because attention by itself does not know where a patch came from: shuffle the "
            "patches and, without positions, the output would just be shuffled too."
        ),
        "ko": (
            "첫 번째 인코더 블록 전에 두 가지 일이 일어납니다. 학습되는 [CLS] 토큰을 N개의 패치 토큰 앞에 붙입니다. "
            "마지막 블록 뒤에 분류기는 이 토큰만 읽습니다. 그다음 모든 토큰에 위치 임베딩을 더합니다. 어텐션만으로는 "
            "패치가 어디서 왔는지 모르기 때문입니다. 위치 정보가 없으면 패치를 섞어도 출력이 똑같이 섞일 뿐입니다."
        ),
    },
    "tokens.sequence": {"en": "The sequence before and after [CLS]", "ko": "[CLS] 앞뒤의 시퀀스"},
    "tokens.before": {"en": "Patch tokens, N x D = {n} x {d}", "ko": "패치 토큰, N x D = {n} x {d}"},
    "tokens.after": {
        "en": "Tokens entering layer 1 (blocks[0]), T x D = {t} x {d}",
        "ko": "1층 (blocks[0])에 들어가는 토큰, T x D = {t} x {d}",
    },
    "tokens.formula_note": {
        "en": "Row 0 of the right-hand map is the [CLS] token; rows 1 to {n} are the patch tokens, each plus its position embedding.",
        "ko": "오른쪽 그림의 0번째 행이 [CLS] 토큰이고, 1번부터 {n}번 행은 각자의 위치 임베딩을 더한 패치 토큰입니다.",
    },
    "tokens.no_cls": {
        "en": "This model has no [CLS] token: the sequence keeps its N tokens, and the classifier averages them at the end.",
        "ko": "이 모델에는 [CLS] 토큰이 없습니다. 시퀀스는 N개의 토큰 그대로이고, 분류기는 마지막에 이 토큰들의 평균을 읽습니다.",
    },
    "tokens.pos": {"en": "The position embeddings that were added", "ko": "더해진 위치 임베딩"},
    "tokens.pos_title": {"en": "pos_embed, T x D = {t} x {d}", "ko": "pos_embed, T x D = {t} x {d}"},
    "tokens.pos_learned": {
        "en": (
            "This model learns one vector per position together with all its other weights. Nothing tells it that "
            "patch {below} sits below patch 0: it has to discover the 2D layout from the data."
        ),
        "ko": (
            "이 모델은 위치마다 벡터 하나를 다른 가중치와 함께 학습합니다. {below}번 패치가 0번 패치 바로 아래에 있다는 것을 "
            "아무도 알려 주지 않으므로, 데이터에서 2D 배치를 스스로 찾아내야 합니다."
        ),
    },
    "tokens.pos_untrained": {
        "en": "This model is untrained, so its learned position embeddings are still random: expect no pattern below.",
        "ko": "이 모델은 학습되지 않아서 위치 임베딩이 아직 무작위입니다. 아래에서 패턴이 보이지 않는 것이 정상입니다.",
    },
    "tokens.pos_fixed": {
        "en": (
            "This model uses fixed 2D sine-cosine position embeddings: they are computed from each patch's row and "
            "column, not learned (the [CLS] position gets zeros)."
        ),
        "ko": (
            "이 모델은 고정된 2D sine-cosine 위치 임베딩을 씁니다. 학습하는 것이 아니라 각 패치의 행과 열에서 계산합니다 "
            "([CLS] 위치는 0)."
        ),
    },
    "tokens.similarity": {
        "en": "Which positions look alike? Cosine similarity of the position embeddings (ViT paper, Fig. 7 centre)",
        "ko": "어떤 위치끼리 닮았을까? 위치 임베딩의 코사인 유사도 (ViT 논문 Fig. 7 가운데)",
    },
    "tokens.similarity_intro": {
        "en": (
            "Each small map belongs to one patch position and sits where that patch sits in the image: it shows the "
            "cosine similarity of that position's embedding with every position. Embeddings that learned the 2D "
            "layout light up nearby patches, their row and their column."
        ),
        "ko": (
            "작은 그림 하나가 패치 위치 하나에 해당하고, 이미지에서 그 패치가 있는 자리에 놓여 있습니다. 그 위치의 임베딩과 "
            "모든 위치의 임베딩 사이의 코사인 유사도를 보여 줍니다. 2D 배치를 배운 임베딩은 가까운 패치, 같은 행과 같은 열이 "
            "밝게 나타납니다."
        ),
    },
    "tokens.choose_pos": {"en": "Position (or click a small map)", "ko": "위치 (작은 그림을 클릭해도 됩니다)"},
    "tokens.mosaic_title": {"en": "One map per position ({h} x {w} maps)", "ko": "위치마다 그림 하나 ({h} x {w}개)"},
    "tokens.large_title": {"en": "Position {index} (row {row}, col {col})", "ko": "위치 {index} ({row}행, {col}열)"},
    "tokens.large_note": {
        "en": "The chosen position's similarity with every position, on the same -1 to 1 scale.",
        "ko": "고른 위치와 모든 위치의 유사도입니다 (같은 -1에서 1 눈금).",
    },
    "tokens.own_range_note": {
        "en": (
            "Each map uses its own colour range, read on the colour bar beside it: fixed sine-cosine tables are "
            "similar almost everywhere, and only their own range shows their pattern."
        ),
        "ko": (
            "각 그림은 옆의 색 막대에 적힌 자기 범위로 색을 칠했습니다. 고정된 사인·코사인 표는 거의 모든 곳이 "
            "비슷해서, 자기 범위로 봐야 패턴이 보입니다."
        ),
    },
    "tokens.compare": {
        "en": "Learned, 1D sinusoidal and 2D sine-cosine embeddings",
        "ko": "학습된 임베딩, 1D sinusoidal, 2D sine-cosine 비교",
    },
    "tokens.compare_intro": {
        "en": (
            'The same position under three schemes. 1D sinusoidal embeddings (from "Attention is all you need") '
            "number the patches in reading order, so a patch resembles its neighbours in the row but not the patch "
            "right below it. 2D sine-cosine embeddings encode the row and the column separately. The ViT paper found "
            "that learned embeddings recover the 2D structure by themselves, and that all three work about equally well."
        ),
        "ko": (
            '같은 위치를 세 가지 방식으로 비교합니다. 1D sinusoidal 임베딩("Attention is all you need")은 패치에 읽는 순서대로 '
            "번호를 매기므로, 같은 행의 이웃과는 닮지만 바로 아래 패치와는 닮지 않습니다. 2D sine-cosine 임베딩은 행과 열을 "
            "따로 담습니다. ViT 논문은 학습된 임베딩이 2D 구조를 스스로 찾아내고, 세 방식의 성능이 거의 같다는 것을 보였습니다."
        ),
    },
    "tokens.kind.learned": {"en": "(a) this model (learned)", "ko": "(a) 이 모델 (학습됨)"},
    "tokens.kind.fixed": {"en": "(a) this model (fixed 2D)", "ko": "(a) 이 모델 (고정 2D)"},
    "tokens.kind.sincos_1d": {"en": "(b) 1D sinusoidal", "ko": "(b) 1D 사인파 (sinusoidal)"},
    "tokens.kind.sincos_2d": {"en": "(c) 2D sine-cosine", "ko": "(c) 2D 사인·코사인"},
    "tokens.axis_token": {"en": "token", "ko": "토큰"},
    "tokens.axis_channel": {"en": "channel (D)", "ko": "채널 (D)"},
    "tokens.download": {
        "en": "Download pos_embed and the similarities (NPZ)",
        "ko": "pos_embed와 유사도 내려받기 (NPZ)",
    },
    # (end of 4. tokens)
    # ---- 5. attention ----
    "attention.intro": {
        "en": (
            "In every encoder block each token asks a question (its query q), every token offers a label (its key k) "
            "and a content (its value v). The weights softmax(q K^T / sqrt(d)) say how much of each value a token "
            "takes in; every head does this on its own, with its own q, k and v. Choose a layer, a head and a "
            "query patch (type its token index or click it on the image) and see where it looks."
        ),
        "ko": (
            "인코더 블록마다 각 토큰은 질문(query q)을 던지고, 모든 토큰은 이름표(key k)와 내용(value v)을 내놓습니다. "
            "가중치 softmax(q K^T / sqrt(d))는 한 토큰이 각 value를 얼마나 가져올지 정합니다. 헤드마다 자기만의 q, k, v로 "
            "이 계산을 따로 합니다. 층, 헤드, query 패치를 고르고(토큰 번호를 입력하거나 이미지에서 클릭) 그 패치가 어디를 "
            "보는지 확인해 보세요."
        ),
    },
    "attention.no_blocks": {
        "en": "This model has no encoder blocks, so there is no attention to show: choose another model.",
        "ko": "이 모델에는 인코더 블록이 없어서 보여 줄 어텐션이 없습니다. 다른 모델을 고르세요.",
    },
    "attention.layer": {"en": "Layer", "ko": "층"},
    "attention.layer_n": {"en": "Layer {n}", "ko": "{n}층"},
    "attention.head": {"en": "Head", "ko": "헤드"},
    "attention.head_n": {"en": "Head {n}", "ko": "헤드 {n}"},
    "attention.mean_heads": {"en": "Mean of heads", "ko": "헤드 평균"},
    "attention.query": {"en": "Query token", "ko": "query 토큰"},
    "attention.query_help_cls": {
        "en": "The token's index in the sequence, 0 to {last}: token 0 is [CLS] and token k is patch k (patches counted from 1 in reading order). A click on a patch chooses it too.",
        "ko": "시퀀스 안의 토큰 번호(0부터 {last}까지)입니다. 0번 토큰은 [CLS]이고, k번 토큰은 k번 패치입니다(패치는 읽는 순서대로 1부터 셉니다). 패치를 눌러 고를 수도 있습니다.",
    },
    "attention.query_help_no_cls": {
        "en": "The token's index in the sequence, 0 to {last}: this model has no [CLS], so token k is patch k + 1 (patches counted from 1 in reading order). A click on a patch chooses it too.",
        "ko": "시퀀스 안의 토큰 번호(0부터 {last}까지)입니다. 이 모델에는 [CLS]가 없어서 k번 토큰이 k + 1번 패치입니다(패치는 읽는 순서대로 1부터 셉니다). 패치를 눌러 고를 수도 있습니다.",
    },
    "attention.token_cls": {"en": "token {token} = [CLS]", "ko": "토큰 {token} = [CLS]"},
    "attention.token_patch": {
        "en": "token {token} = patch {patch} (row {row}, col {col})",
        "ko": "토큰 {token} = 패치 {patch} ({row}행, {col}열)",
    },
    "attention.click_hint": {
        "en": "Click any patch on either image to make it the query.",
        "ko": "두 그림 중 어느 쪽이든 패치를 클릭하면 그 패치가 query가 됩니다.",
    },
    "attention.maps": {"en": "Where one token looks", "ko": "한 토큰이 보는 곳"},
    "attention.cls_title": {"en": "[CLS] → patches, {where}", "ko": "[CLS] → 패치, {where}"},
    "attention.mean_title": {"en": "Mean over patch queries, {where}", "ko": "패치 query 평균, {where}"},
    "attention.query_title": {"en": "Query {token} → patches, {where}", "ko": "query {token} → 패치, {where}"},
    "attention.no_cls": {
        "en": (
            "This model has no [CLS] token: it averages its patch tokens to classify. The left map therefore shows "
            "the attention of all patch queries, averaged."
        ),
        "ko": (
            "이 모델에는 [CLS] 토큰이 없고, 분류할 때 패치 토큰들의 평균을 씁니다. 그래서 왼쪽 그림은 모든 패치 query의 "
            "어텐션을 평균한 것입니다."
        ),
    },
    "attention.maps_caption": {
        "en": (
            "Colour = the softmax weight a query gives each patch (0 to 1). The weights of one query over all {tokens} "
            "tokens sum to 1; a map shows the patches only, so it sums to 1 minus the weight given to [CLS]."
        ),
        "ko": (
            "색 = query가 각 패치에 주는 softmax 가중치(0~1)입니다. 한 query가 {tokens}개 토큰 전체에 주는 가중치의 합은 1이고, "
            "그림에는 패치만 있으므로 합은 1에서 [CLS]에 준 가중치를 뺀 값입니다."
        ),
    },
    "attention.heads": {"en": "Every head of this layer", "ko": "이 층의 모든 헤드"},
    "attention.heads_of": {"en": "Show the attention of", "ko": "누구의 어텐션을 볼까요"},
    "attention.heads_of.readout": {"en": "[CLS]", "ko": "[CLS]"},
    "attention.heads_of.readout_mean": {"en": "mean of patch queries", "ko": "패치 query 평균"},
    "attention.heads_of.query": {"en": "the query token", "ko": "선택한 query 토큰"},
    "attention.heads_caption": {
        "en": "{heads} heads of {layer}. Each small map has its own colour scale: compare where the heads look, not how strongly.",
        "ko": "{layer}의 헤드 {heads}개. 작은 그림마다 색 범위가 따로이므로, 세기가 아니라 어디를 보는지를 비교하세요.",
    },
    "attention.rollout": {"en": "Attention rollout: through all layers", "ko": "Attention rollout: 모든 층을 거쳐서"},
    "attention.rollout_intro": {
        "en": (
            "One layer's map ignores that earlier layers have already mixed the tokens. Attention rollout "
            "(Abnar & Zuidema, 2020) follows the mixing through every block: it fuses the heads of each block into one "
            "matrix, adds the identity for the residual connection (a token also keeps itself), makes every row sum to 1, "
            "and multiplies the blocks together. The result estimates how much each input patch contributes to the final "
            "{readout}."
        ),
        "ko": (
            "한 층의 그림은 앞 층들이 이미 토큰을 섞어 놓았다는 사실을 무시합니다. Attention rollout(Abnar & Zuidema, 2020)은 "
            "모든 블록을 따라가며 이 섞임을 추적합니다. 블록마다 헤드들을 하나의 행렬로 합치고, residual 연결을 위해 단위 행렬을 "
            "더하고(토큰은 자기 자신도 유지하므로), 각 행의 합이 1이 되게 한 뒤, 블록들을 차례로 곱합니다. 결과는 각 입력 패치가 "
            "최종 {readout}에 얼마나 기여하는지를 추정합니다."
        ),
    },
    "attention.rollout_readout.cls": {"en": "[CLS] vector", "ko": "[CLS] 벡터"},
    "attention.rollout_readout.mean": {"en": "average of the patch tokens", "ko": "패치 토큰 평균"},
    "attention.fusion": {"en": "Head fusion", "ko": "헤드 합치기"},
    "attention.fusion.mean": {"en": "mean", "ko": "평균 (mean)"},
    "attention.fusion.max": {"en": "max", "ko": "최댓값 (max)"},
    "attention.fusion.min": {"en": "min", "ko": "최솟값 (min)"},
    "attention.rollout_caption": {
        "en": (
            "Left: the mixing of every layer multiplied together. Right: the last layer's attention alone. "
            "Where they differ, earlier layers had already moved information between patches."
        ),
        "ko": "왼쪽은 모든 층의 섞임을 곱한 결과이고, 오른쪽은 마지막 층의 어텐션만 본 것입니다. 둘이 다른 곳은 앞선 층들이 이미 패치 사이에 정보를 옮겨 놓은 곳입니다.",
    },
    "attention.fusion_help": {
        "en": "How the heads of a block become one matrix: their mean, or for every pair of tokens the strongest (max) or weakest (min) head.",
        "ko": "한 블록의 헤드들을 하나의 행렬로 만드는 방법: 평균, 또는 토큰 쌍마다 가장 강한 헤드(max)나 가장 약한 헤드(min)를 씁니다.",
    },
    "attention.rollout_title": {
        "en": "Rollout over {depth} layers, heads fused by {fusion}",
        "ko": "{depth}개 층의 rollout, 헤드 합치기: {fusion}",
    },
    "attention.distance": {"en": "How far does each head look?", "ko": "각 헤드는 얼마나 멀리 볼까요?"},
    "attention.distance_intro": {
        "en": (
            "The mean attention distance of a head: for every patch query, the distance in pixels to each patch it "
            "attends to, weighted by the attention, then averaged (the ViT paper, Fig. 7 right). In trained ViTs some "
            "heads of the first layers already look across the whole image, while others stay local like a small "
            "convolution; deeper layers look far."
        ),
        "ko": (
            "헤드의 평균 어텐션 거리: 각 패치 query에서 어텐션을 주는 패치까지의 픽셀 거리를 어텐션 가중치로 평균한 값입니다"
            "(ViT 논문 Fig. 7 오른쪽). 학습된 ViT에서는 앞쪽 층에서도 어떤 헤드는 이미 이미지 전체를 보고, 어떤 헤드는 작은 "
            "convolution처럼 가까운 곳만 봅니다. 깊은 층은 멀리 봅니다."
        ),
    },
    "attention.distance_title": {
        "en": "Mean attention distance by head and depth",
        "ko": "헤드와 깊이에 따른 평균 어텐션 거리",
    },
    "attention.distance_x": {"en": "Layer", "ko": "층"},
    "attention.distance_y": {"en": "Mean attention distance (pixels)", "ko": "평균 어텐션 거리 (픽셀)"},
    "attention.distance_head": {"en": "head", "ko": "헤드"},
    "attention.distance_uniform": {"en": "uniform attention", "ko": "균일한 어텐션"},
    "attention.distance_single": {
        "en": (
            "Computed from this one image, averaged over its {patches} patch queries (the paper averages over many "
            "images). The dotted line is the distance of a head that attends to every patch equally."
        ),
        "ko": (
            "이 이미지 한 장으로 계산해서 {patches}개 패치 query에 대해 평균한 값입니다(논문은 많은 이미지에 대해 평균합니다). "
            "점선은 모든 패치에 똑같이 어텐션을 주는 헤드의 거리입니다."
        ),
    },
    "attention.worked": {"en": "One query, with real numbers", "ko": "query 하나, 실제 숫자로"},
    "attention.worked_intro": {
        "en": (
            "Here is the computation for {token} in {where}, with this model's own numbers. The query vector q is "
            "compared with the key k of every one of the {tokens} tokens by a dot product, divided by sqrt(d) = "
            "sqrt({d}) = {sqrt_d:.2f}; softmax turns these scores into weights that sum to 1; the output is the "
            "weighted sum of the value vectors."
        ),
        "ko": (
            "{where}에서 {token}에 대한 계산을 이 모델의 실제 숫자로 보여 줍니다. query 벡터 q를 {tokens}개 토큰 각각의 key k와 "
            "내적한 뒤 sqrt(d) = sqrt({d}) = {sqrt_d:.2f}로 나눕니다. softmax가 이 점수들을 합이 1인 가중치로 바꾸고, 출력은 "
            "value 벡터들의 가중합입니다."
        ),
    },
    "attention.worked_mean_note": {
        "en": "The mean of heads is not one softmax, so this example uses head 1.",
        "ko": "헤드 평균은 하나의 softmax가 아니므로, 이 예시는 헤드 1을 사용합니다.",
    },
    "attention.worked_q": {
        "en": "The query vector q (first {n} of {d} numbers)",
        "ko": "query 벡터 q ({d}개 중 처음 {n}개)",
    },
    "attention.worked_keys": {"en": "The {k} keys with the largest weights", "ko": "가중치가 가장 큰 key {k}개"},
    "attention.worked_bars": {"en": "softmax weights of these keys", "ko": "이 key들의 softmax 가중치"},
    "attention.col.token": {"en": "token", "ko": "토큰"},
    "attention.col.position": {"en": "position", "ko": "위치"},
    "attention.col.score": {"en": "score q·k / sqrt(d)", "ko": "점수 q·k / sqrt(d)"},
    "attention.col.weight": {"en": "weight (softmax)", "ko": "가중치 (softmax)"},
    "attention.col.dim": {"en": "dimension", "ko": "차원"},
    "attention.position": {"en": "row {row}, col {col}", "ko": "{row}행, {col}열"},
    "attention.worked_sum": {
        "en": "These {k} keys carry {shown:.4f} of the weight, the other {others} keys {rest:.4f}: together {total:.4f} = 1.",
        "ko": "이 key {k}개가 가중치 {shown:.4f}를, 나머지 key {others}개가 {rest:.4f}를 가집니다. 합은 {total:.4f} = 1입니다.",
    },
    "attention.worked_output": {
        "en": "The output: the weighted sum of the values (first {n} of {d} numbers)",
        "ko": "출력: value의 가중합 ({d}개 중 처음 {n}개)",
    },
    "attention.worked_output_note": {
        "en": "This is this head's share of the token's update; the output projection then mixes all {heads} heads together.",
        "ko": "이것은 토큰 업데이트 중 이 헤드의 몫입니다. 그다음 출력 projection이 헤드 {heads}개를 함께 섞습니다.",
    },
    "attention.download_maps": {"en": "Download the maps shown (CSV)", "ko": "보이는 그림의 데이터 내려받기 (CSV)"},
    "attention.download_tensor": {
        "en": "Download this layer's full attention (B, heads, T, T) (NPZ)",
        "ko": "이 층의 전체 어텐션 (B, heads, T, T) 내려받기 (NPZ)",
    },
    # (end of 5. attention)
    # ---- 6. block ----
    "block.intro": {
        "en": (
            "Every layer of the encoder is the same block, repeated. It never changes the shape of the tokens: it "
            "adds two corrections to them. First each token is normalised (LayerNorm) and multi-head self-attention "
            "lets it gather information from the other tokens; the result is added to the token (a residual "
            "connection). Then each token is normalised again and a small two-layer MLP with GELU processes it on "
            "its own; that result is added too. The running sum of the tokens is called the residual stream."
        ),
        "ko": (
            "인코더의 모든 층은 똑같은 블록을 반복한 것입니다. 블록은 토큰의 모양을 바꾸지 않고, 토큰에 두 번의 수정값을 더합니다. "
            "먼저 각 토큰을 정규화(LayerNorm)한 뒤 multi-head self-attention으로 다른 토큰의 정보를 모으고, 그 결과를 원래 "
            "토큰에 더합니다(잔차 연결, residual connection). 다음으로 토큰을 다시 정규화하고 GELU가 들어간 작은 2층 MLP가 각 "
            "토큰을 따로 처리하며, 그 결과도 더합니다. 이렇게 계속 더해지는 토큰의 흐름을 residual stream이라고 부릅니다."
        ),
    },
    "block.no_blocks": {
        "en": "This model has no encoder blocks, so there is nothing to show here.",
        "ko": "이 모델에는 인코더 블록이 없어서 보여 줄 것이 없습니다.",
    },
    "block.token_cls": {"en": "Token {token}: [CLS]", "ko": "토큰 {token}: [CLS]"},
    "block.token_patch": {
        "en": "Token {token}: patch {patch} (row {row}, col {col})",
        "ko": "토큰 {token}: 패치 {patch} ({row}행, {col}열)",
    },
    "block.diagram": {
        "en": "One encoder block, with the shapes of this model",
        "ko": "인코더 블록 하나와 이 모델의 텐서 모양",
    },
    "block.diagram_title": {
        "en": "Encoder block (the model stacks {depth} of them)",
        "ko": "인코더 블록 (이 모델은 {depth}개를 쌓음)",
    },
    "block.step.input": {"en": "x: tokens entering", "ko": "x: 들어오는 토큰"},
    "block.step.norm1": {"en": "LayerNorm (norm1)", "ko": "LayerNorm (norm1)"},
    "block.step.qkv": {"en": "qkv: Linear D → 3D", "ko": "qkv: Linear D → 3D"},
    "block.step.attention": {"en": "softmax(Q Kᵀ/√d) per head", "ko": "헤드별 softmax(Q Kᵀ/√d)"},
    "block.step.attn_proj": {"en": "× V, join heads, proj D → D", "ko": "× V, 헤드 합침, proj D → D"},
    "block.step.add1": {"en": "+ residual: x + attention", "ko": "+ 잔차: x + attention"},
    "block.step.norm2": {"en": "LayerNorm (norm2)", "ko": "LayerNorm (norm2)"},
    "block.step.fc1": {"en": "fc1: Linear D → 4D", "ko": "fc1: Linear D → 4D"},
    "block.step.gelu": {"en": "GELU", "ko": "GELU"},
    "block.step.fc2": {"en": "fc2: Linear 4D → D", "ko": "fc2: Linear 4D → D"},
    "block.step.add2": {"en": "+ residual: block output", "ko": "+ 잔차: 블록 출력"},
    "block.parts": {
        "en": (
            "- **LayerNorm** rescales every token on its own to mean 0 and standard deviation 1 over its {dim} "
            "numbers, then applies a learned scale and shift. It comes *before* each branch (pre-LN), so the "
            "branches always read tokens of a similar size however large the stream has grown.\n"
            "- **Multi-head self-attention** is the only step where tokens talk to each other: {heads} heads each "
            "mix the tokens with their own attention weights (see the attention page).\n"
            "- **Residual connections** (red arrows) add each branch's output to its input instead of replacing "
            "it, so a block only has to learn a correction, and information from the patches survives all layers.\n"
            "- **MLP**: fc1 widens each token to {hidden} numbers, GELU keeps positive values and nearly zeroes "
            "negative ones, fc2 brings it back to {dim}. It works on every token separately, with the same weights."
        ),
        "ko": (
            "- **LayerNorm**은 각 토큰의 {dim}개 숫자를 토큰마다 따로 평균 0, 표준편차 1로 맞춘 뒤, 학습된 배율과 이동을 "
            "적용합니다. 각 가지(branch) *앞*에 오기 때문에(pre-LN), residual stream이 아무리 커져도 가지는 비슷한 크기의 "
            "토큰을 읽습니다.\n"
            "- **Multi-head self-attention**은 토큰끼리 정보를 주고받는 유일한 단계입니다. {heads}개의 헤드가 각자의 "
            "어텐션 가중치로 토큰을 섞습니다(어텐션 페이지 참고).\n"
            "- **잔차 연결**(빨간 화살표)은 가지의 출력으로 입력을 바꾸지 않고 입력에 더합니다. 그래서 블록은 수정값만 "
            "배우면 되고, 패치의 정보가 모든 층을 지나 살아남습니다.\n"
            "- **MLP**: fc1이 각 토큰을 {hidden}개 숫자로 넓히고, GELU가 양수는 살리고 음수는 거의 0으로 만들며, fc2가 "
            "다시 {dim}개로 줄입니다. 모든 토큰에 같은 가중치로, 토큰마다 따로 적용됩니다."
        ),
    },
    "block.layer_title": {"en": "Inside one layer, token by token", "ko": "층 하나의 내부, 토큰별로"},
    "block.layer": {"en": "Layer", "ko": "층"},
    "block.layer_n": {"en": "Layer {n} (blocks[{index}])", "ko": "{n}층 (blocks[{index}])"},
    "block.token": {"en": "Token (for the GELU histogram)", "ko": "토큰 (GELU 히스토그램용)"},
    "block.metric_attn": {"en": "Attention branch / stream", "ko": "attention 가지 / stream"},
    "block.metric_attn_help": {
        "en": "Mean over the patch tokens of ‖attention output‖ / ‖x‖: how much attention changes the tokens in this layer.",
        "ko": "패치 토큰에 대한 ‖attention 출력‖ / ‖x‖의 평균: 이 층에서 attention이 토큰을 얼마나 바꾸는지.",
    },
    "block.metric_mlp": {"en": "MLP branch / stream", "ko": "MLP 가지 / stream"},
    "block.metric_mlp_help": {
        "en": "Mean over the patch tokens of ‖MLP output‖ / ‖x + attention‖.",
        "ko": "패치 토큰에 대한 ‖MLP 출력‖ / ‖x + attention‖의 평균.",
    },
    "block.metric_cosine": {"en": "Cosine(input, output)", "ko": "코사인(입력, 출력)"},
    "block.metric_cosine_help": {
        "en": "Mean cosine similarity between each patch token before and after the block: 1 means the block kept its direction.",
        "ko": "블록 전후 각 패치 토큰의 코사인 유사도 평균: 1이면 블록이 방향을 그대로 두었다는 뜻입니다.",
    },
    "block.series.input": {"en": "‖x‖ before norm1", "ko": "norm1 전 ‖x‖"},
    "block.series.norm1": {"en": "‖norm1(x)‖", "ko": "‖norm1(x)‖"},
    "block.series.mid": {"en": "‖x + attn‖ before norm2", "ko": "norm2 전 ‖x + attn‖"},
    "block.series.norm2": {"en": "‖norm2(x + attn)‖", "ko": "‖norm2(x + attn)‖"},
    "block.series.attn_ratio": {"en": "‖attention branch‖ / ‖x‖", "ko": "‖attention 가지‖ / ‖x‖"},
    "block.series.mlp_ratio": {"en": "‖MLP branch‖ / ‖x + attn‖", "ko": "‖MLP 가지‖ / ‖x + attn‖"},
    "block.norms_title": {
        "en": "Token sizes before and after LayerNorm, {where}",
        "ko": "LayerNorm 전후의 토큰 크기, {where}",
    },
    "block.ratio_title": {
        "en": "How much each branch changes each token, {where}",
        "ko": "각 가지가 토큰을 바꾸는 정도, {where}",
    },
    "block.x_token": {"en": "Token (0 = first token)", "ko": "토큰 (0 = 첫 토큰)"},
    "block.y_norm": {"en": "Length ‖·‖ (L2 norm)", "ko": "길이 ‖·‖ (L2 norm)"},
    "block.y_ratio": {"en": "Branch size / stream size", "ko": "가지 크기 / stream 크기"},
    "block.norms_caption": {
        "en": (
            "Each point is one token's length over its {dim} numbers. Before LayerNorm the tokens can differ a lot; "
            "after it they all have nearly the same length (√{dim} times the learned scale), so attention and the "
            "MLP see tokens of a similar size. A ratio of 0.1 means the branch changes the token by about a tenth."
        ),
        "ko": (
            "각 점은 토큰 하나의 {dim}개 숫자에 대한 길이입니다. LayerNorm 전에는 토큰마다 크기가 많이 다를 수 있지만, 후에는 "
            "거의 같은 길이(√{dim} × 학습된 배율)가 되어 attention과 MLP가 비슷한 크기의 토큰을 봅니다. 비율이 0.1이면 그 가지가 "
            "토큰을 약 10분의 1만큼 바꾼다는 뜻입니다."
        ),
    },
    "block.gelu_title": {
        "en": "GELU and what it really receives: {token}, {where}",
        "ko": "GELU와 실제 입력값: {token}, {where}",
    },
    "block.gelu_x": {"en": "Input of the activation (fc1 output)", "ko": "활성화 함수의 입력 (fc1 출력)"},
    "block.gelu_y": {"en": "Activation output", "ko": "활성화 함수의 출력"},
    "block.gelu_count": {"en": "Hidden units (count)", "ko": "은닉 유닛 수"},
    "block.gelu_values": {"en": "fc1 outputs of this token", "ko": "이 토큰의 fc1 출력"},
    "block.gelu_caption": {
        "en": (
            "The histogram shows all {hidden} numbers that fc1 gives this token. {negative} of them are negative: "
            "GELU(x) = x·Φ(x) nearly zeroes those (unlike ReLU, it lets small negative values through a little), "
            "and passes large positive ones almost unchanged."
        ),
        "ko": (
            "히스토그램은 fc1이 이 토큰에 내놓은 {hidden}개 숫자 전부입니다. 그중 {negative}가 음수이고, GELU(x) = x·Φ(x)는 "
            "이를 거의 0으로 만듭니다(ReLU와 달리 작은 음수는 조금 통과시킵니다). 큰 양수는 거의 그대로 내보냅니다."
        ),
    },
    "block.depth_title": {"en": "Layer by layer", "ko": "층별로 보기"},
    "block.depth_intro": {
        "en": (
            "How big the residual stream and the two branches are in every layer (average over the patch tokens; "
            "dashed: the [CLS] token), and how similar each layer's output is to its input."
        ),
        "ko": (
            "층마다 residual stream과 두 가지(branch)의 크기(패치 토큰 평균, 점선: [CLS] 토큰), 그리고 각 층의 출력이 입력과 "
            "얼마나 비슷한지 보여 줍니다."
        ),
    },
    "block.series.residual_norm": {"en": "residual stream ‖x‖", "ko": "잔차 stream ‖x‖"},
    "block.series.attn_norm": {"en": "attention branch", "ko": "attention 가지"},
    "block.series.mlp_norm": {"en": "MLP branch", "ko": "MLP 가지"},
    "block.series.cosine": {"en": "cosine(input, output)", "ko": "코사인(입력, 출력)"},
    "block.depth_norms_title": {
        "en": "Size of the stream and of each branch, by layer",
        "ko": "층별 stream과 각 가지의 크기",
    },
    "block.depth_cosine_title": {
        "en": "How much each layer turns the tokens",
        "ko": "각 층이 토큰의 방향을 바꾸는 정도",
    },
    "block.x_layer": {"en": "Layer", "ko": "층"},
    "block.y_cosine": {"en": "Cosine similarity", "ko": "코사인 유사도"},
    "block.depth_caption": {
        "en": (
            "The stream usually grows with depth while each branch adds a smaller correction; a cosine near 1 means "
            "the layer mostly keeps what it received. The dotted line marks the chosen layer."
        ),
        "ko": (
            "보통 stream은 층이 깊어질수록 커지고, 각 가지는 그보다 작은 수정값을 더합니다. 코사인이 1에 가까우면 그 층은 받은 "
            "것을 대부분 유지한다는 뜻입니다. 점선은 고른 층입니다."
        ),
    },
    "block.no_cls": {
        "en": "This model has no [CLS] token (it averages the patch tokens), so only the patch average is shown. The dotted line marks the chosen layer.",
        "ko": "이 모델에는 [CLS] 토큰이 없어서(패치 토큰을 평균함) 패치 평균만 보여 줍니다. 점선은 고른 층입니다.",
    },
    # (end of 6. block)
    # ---- 7. prediction ----
    "prediction.intro": {
        "en": (
            "After the last block, the model reads one vector, the [CLS] token (or the average of the patch tokens), "
            "and a single Linear layer, the head, turns it into one score (logit) per class. Softmax turns the "
            "scores into probabilities that sum to 1. Below: the answer, when during the layers it appears, and "
            "which patches it depends on."
        ),
        "ko": (
            "마지막 블록이 끝나면 모델은 벡터 하나, 곧 [CLS] 토큰(또는 패치 토큰의 평균)을 읽고, head라는 Linear 층 하나가 이를 "
            "클래스마다 하나의 점수(logit)로 바꿉니다. softmax는 이 점수를 합이 1인 확률로 바꿉니다. 아래에서 답이 무엇인지, 층을 "
            "지나며 언제 나타나는지, 어떤 패치에 기대는지 볼 수 있습니다."
        ),
    },
    "prediction.no_head": {
        "en": "This model has no classification head (it outputs features, not classes): choose a model with classes to see a prediction.",
        "ko": "이 모델에는 분류 head가 없습니다(클래스가 아닌 특징을 출력합니다). 예측을 보려면 클래스가 있는 모델을 고르세요.",
    },
    "prediction.class_n": {"en": "class {n}", "ko": "클래스 {n}"},
    "prediction.topk_title": {"en": "The head and the top classes", "ko": "head와 상위 클래스"},
    "prediction.head_cls": {
        "en": (
            "The tokens leave the last block as `{tokens}`. The [CLS] token after the final LayerNorm, `{pre}`, goes "
            "through one Linear layer (head, weight `{weight}`) to give {n} logits `{logits}`; softmax turns them "
            "into probabilities."
        ),
        "ko": (
            "토큰은 `{tokens}` 모양으로 마지막 블록을 나옵니다. 마지막 LayerNorm을 지난 [CLS] 토큰 `{pre}`가 Linear 층 하나"
            "(head, 가중치 `{weight}`)를 지나 {n}개의 logit `{logits}`이 되고, softmax가 이를 확률로 바꿉니다."
        ),
    },
    "prediction.head_avg": {
        "en": (
            "This model has no [CLS] token. The tokens leave the last block as `{tokens}`; the average of the patch "
            "tokens, after the final LayerNorm, `{pre}`, goes through one Linear layer (head, weight `{weight}`) to "
            "give {n} logits `{logits}`; softmax turns them into probabilities."
        ),
        "ko": (
            "이 모델에는 [CLS] 토큰이 없습니다. 토큰은 `{tokens}` 모양으로 마지막 블록을 나오고, 패치 토큰의 평균을 마지막 "
            "LayerNorm에 통과시킨 `{pre}`가 Linear 층 하나(head, 가중치 `{weight}`)를 지나 {n}개의 logit `{logits}`이 되며, "
            "softmax가 이를 확률로 바꿉니다."
        ),
    },
    "prediction.known_classes": {
        "en": "This model knows only {n} classes ({names}) and gives every image one of them, even a photo "
        "of something else: the probabilities always sum to 1 over these {n}.",
        "ko": "이 모델은 {n}개 클래스({names})만 알고, 다른 것을 찍은 사진에도 그중 하나를 답합니다. "
        "확률은 언제나 이 {n}개 클래스에 걸쳐 합이 1입니다.",
    },
    "prediction.k": {"en": "Number of classes to show (k)", "ko": "보여 줄 클래스 수 (k)"},
    "prediction.topk_chart": {"en": "Top {k} classes (softmax probability)", "ko": "상위 {k}개 클래스 (softmax 확률)"},
    "prediction.lens_title": {
        "en": "The logit lens: when does the answer appear?",
        "ko": "Logit lens: 답은 언제 나타날까?",
    },
    "prediction.lens_intro_cls": {
        "en": (
            "What would the model answer if it stopped early? Apply the final LayerNorm and the head to the [CLS] "
            "token after each layer (0: the embeddings, before layer 1). The lines follow the final top "
            "classes; the last point is the real prediction."
        ),
        "ko": (
            "모델이 중간에 멈춘다면 무엇이라고 답할까요? 각 층 뒤의 [CLS] 토큰에 마지막 LayerNorm과 head를 적용해 봅니다"
            "(0: 1층에 들어가기 전의 임베딩). 선은 최종 상위 클래스를 따라가고, 마지막 점이 실제 예측입니다."
        ),
    },
    "prediction.lens_intro_avg": {
        "en": (
            "What would the model answer if it stopped early? This model has no [CLS] token, so the average of the "
            "patch tokens after each layer (0: the embeddings, before layer 1) goes through the final LayerNorm and the head. "
            "The lines follow the final top classes; the last point is the real prediction."
        ),
        "ko": (
            "모델이 중간에 멈춘다면 무엇이라고 답할까요? 이 모델에는 [CLS] 토큰이 없으므로 각 층 뒤 패치 토큰의 평균(0: "
            "1층 전의 임베딩)을 마지막 LayerNorm과 head에 통과시킵니다. 선은 최종 상위 클래스를 따라가고, 마지막 점이 실제 예측입니다."
        ),
    },
    "prediction.after_embed": {"en": "Embeddings (before layer 1)", "ko": "임베딩 (1층 전)"},
    "prediction.after_layer": {"en": "After layer {n} (blocks[{index}])", "ko": "{n}층 (blocks[{index}]) 뒤"},
    "prediction.lens_chart": {
        "en": "Probability of the final top classes after each layer",
        "ko": "각 층 뒤 최종 상위 클래스의 확률",
    },
    "prediction.x_block": {"en": "After layer (0 = the embeddings)", "ko": "지난 층 (0 = 임베딩)"},
    "prediction.y_prob": {"en": "Probability", "ko": "확률"},
    "prediction.col.after": {"en": "Read after", "ko": "읽은 위치"},
    "prediction.col.top1": {"en": "Top-1 class", "ko": "1위 클래스"},
    "prediction.col.prob": {"en": "Probability", "ko": "확률"},
    "prediction.col.rank": {"en": "Rank of '{name}'", "ko": "'{name}'의 순위"},
    "prediction.occlusion_title": {
        "en": "Occlusion: which patches does the answer need?",
        "ko": "가리기 실험: 답에 필요한 패치는?",
    },
    "prediction.occlusion_intro": {
        "en": (
            "Hide patches one group at a time by setting them to the dataset's mean colour (0 after normalisation), "
            "and watch the probability of the predicted class. Red: the patches attention rollout ranks as most "
            "important go first. Grey: the same number of patches in a random (fixed) order. If the red curve falls "
            "faster, the rollout map points at patches the model really uses."
        ),
        "ko": (
            "패치를 몇 개씩 데이터셋의 평균 색(정규화 후 0)으로 가리면서 예측 클래스의 확률을 봅니다. 빨간색: attention "
            "rollout이 가장 중요하다고 본 패치부터 가립니다. 회색: 같은 수의 패치를 무작위(고정된) 순서로 가립니다. 빨간 곡선이 "
            "더 빨리 떨어지면 rollout 지도가 모델이 실제로 쓰는 패치를 가리킨다는 뜻입니다."
        ),
    },
    "prediction.reading.rollout_faster": {
        "en": "On this image the red curve falls faster (mean probability {rollout} against {random} in random order): hiding the patches rollout ranks highest hurts the answer most, so the map points at patches the model uses.",
        "ko": "이 이미지에서는 빨간 곡선이 더 빨리 떨어집니다 (평균 확률 {rollout}, 무작위 순서는 {random}). rollout이 가장 높게 본 패치를 가리면 답이 가장 크게 흔들리므로, 이 지도는 모델이 실제로 쓰는 패치를 가리킵니다.",
    },
    "prediction.reading.random_faster": {
        "en": "On this image the grey curve falls faster (mean probability {random} in random order against {rollout} for rollout's order): the answer survives losing its most attended patches better than losing random ones, so here rollout does not point at the evidence the model needs. Attention shows where information flows, not always what decides.",
        "ko": "이 이미지에서는 회색 곡선이 더 빨리 떨어집니다 (무작위 순서의 평균 확률 {random}, rollout 순서는 {rollout}). 가장 주목받은 패치를 잃을 때보다 무작위 패치를 잃을 때 답이 더 흔들리므로, 여기서는 rollout이 모델이 필요로 하는 근거를 가리키지 않습니다. 어텐션은 정보가 흐르는 곳을 보여 줄 뿐, 늘 답을 정하는 곳을 보여 주지는 않습니다.",
    },
    "prediction.reading.similar": {
        "en": "On this image both curves fall about as fast (mean probability {rollout} for rollout's order, {random} in random order): rollout's ranking says little about which patches the answer needs.",
        "ko": "이 이미지에서는 두 곡선이 비슷하게 떨어집니다 (rollout 순서의 평균 확률 {rollout}, 무작위 순서 {random}). rollout의 순위는 답에 필요한 패치를 거의 알려 주지 않습니다.",
    },
    "prediction.occlusion_running": {
        "en": "Running the occluded images through the model…",
        "ko": "가린 이미지를 모델에 통과시키는 중…",
    },
    "prediction.order.rollout": {"en": "most attended first (rollout)", "ko": "가장 주목받은 패치부터 (rollout)"},
    "prediction.order.random": {"en": "random order", "ko": "무작위 순서"},
    "prediction.occlusion_chart": {
        "en": "Probability of '{name}' as patches are hidden",
        "ko": "패치를 가릴 때 '{name}'의 확률",
    },
    "prediction.x_hidden": {"en": "Share of patches hidden", "ko": "가린 패치 비율"},
    "prediction.hidden_n": {"en": "{n} of {total} patches hidden", "ko": "패치 {total}개 중 {n}개 가림"},
    "prediction.rollout_title": {
        "en": "Attention rollout (brightest hidden first)",
        "ko": "Attention rollout (밝은 곳부터 가림)",
    },
    "prediction.occlusion_caption": {
        "en": "{steps} steps: each curve is {images} images in one batched forward pass over the {patches} patches, computed once per model and image.",
        "ko": "{steps}단계: 각 곡선은 패치 {patches}개에 대한 이미지 {images}장을 한 번의 배치 순전파로 계산한 것이며, 모델과 이미지마다 한 번만 계산합니다.",
    },
    "prediction.occluded_n": {"en": "{n} hidden: {p}", "ko": "{n}개 가림: {p}"},
    "prediction.download_lens": {"en": "Download the logit lens (CSV)", "ko": "logit lens 내려받기 (CSV)"},
    "prediction.download_occlusion": {"en": "Download the occlusion curves (CSV)", "ko": "가리기 곡선 내려받기 (CSV)"},
    # (end of 7. prediction)
    # ---- 8. ViT vs CNN ----
    "compare.intro": {
        "en": (
            "A convolutional network builds two assumptions in: locality (a unit sees a small neighbourhood, which "
            "widens layer by layer) and translation equivariance (the same filter everywhere). A ViT builds in "
            "neither: every patch can attend to every other from the first layer, and where a patch sits is only "
            "known through the position embeddings it learned. That is why a ViT needs more data, and why hybrid "
            "models put a CNN stem in front of the transformer. Here both look at the same image."
        ),
        "ko": (
            "합성곱 신경망(CNN)에는 두 가지 가정이 들어 있습니다. 지역성(한 유닛은 작은 이웃만 보고, 층을 지날수록 넓어짐)과 "
            "평행 이동 등변성(어디서나 같은 필터)입니다. ViT에는 둘 다 없습니다. 첫 층부터 모든 패치가 다른 모든 패치에 "
            "어텐션할 수 있고, 패치가 어디에 있는지는 학습한 위치 임베딩으로만 압니다. 그래서 ViT는 데이터가 더 많이 "
            "필요하고, 하이브리드 모델은 트랜스포머 앞에 CNN 줄기(stem)를 둡니다. 여기서는 두 모델이 같은 이미지를 봅니다."
        ),
    },
    "compare.cnn": {"en": "CNN to compare with", "ko": "비교할 CNN"},
    "compare.cnn_path": {"en": "Other CNN (a .safetensors path)", "ko": "다른 CNN (.safetensors 경로)"},
    "compare.no_cnn": {
        "en": (
            "No CNN is available yet: the shipped CIFAR-10 CNN (cifar10-cnn) is still training. Give the path of a "
            "CNN trained with `python -m vitviz.train --arch cnn` above."
        ),
        "ko": (
            "아직 쓸 수 있는 CNN이 없습니다. 함께 제공될 CIFAR-10 CNN(cifar10-cnn)은 아직 학습 중입니다. "
            "`python -m vitviz.train --arch cnn`으로 학습한 CNN의 경로를 위에 입력하세요."
        ),
    },
    "compare.not_cnn": {
        "en": "{name} is not a CNN: choose a convolutional network here; the ViT is the sidebar's model.",
        "ko": "{name}은(는) CNN이 아닙니다. 여기서는 합성곱 신경망을 고르세요. ViT는 사이드바에서 고른 모델입니다.",
    },
    "compare.classes_differ": {
        "en": "The two models predict different classes: compare models trained on the same classes (the sidebar's ViT and this CNN).",
        "ko": "두 모델이 예측하는 클래스가 다릅니다. 같은 클래스로 학습한 모델끼리 비교하세요 (사이드바의 ViT와 이 CNN).",
    },
    "compare.answers": {"en": "Both answers", "ko": "두 모델의 답"},
    "compare.vit_top": {"en": "ViT: top 5", "ko": "ViT: 상위 5개"},
    "compare.cnn_top": {"en": "CNN: top 5", "ko": "CNN: 상위 5개"},
    "compare.maps_title": {"en": "Where did each look?", "ko": "각 모델은 어디를 봤을까?"},
    "compare.maps_intro": {
        "en": (
            "For one class: the ViT's attention rollout (how [CLS] mixes the patches, whatever the class), its "
            "gradient-weighted rollout for the class (Chefer et al. 2021), and Grad-CAM on the CNN's last convolution "
            "(Selvaraju et al. 2017). Each map is divided by its own maximum, so all read on one 0 to 1 scale."
        ),
        "ko": (
            "한 클래스에 대해 봅니다. ViT의 attention rollout(클래스와 상관없이 [CLS]가 패치를 섞는 방식), 그 클래스에 대한 "
            "gradient 가중 rollout(Chefer 외, 2021), 그리고 CNN의 마지막 합성곱에 대한 Grad-CAM(Selvaraju 외, 2017)입니다. "
            "그림마다 자기 최댓값으로 나누었으므로 모두 같은 0에서 1 눈금으로 읽습니다."
        ),
    },
    "compare.class": {"en": "Class to explain", "ko": "설명할 클래스"},
    "compare.map.rollout": {"en": "ViT: attention rollout", "ko": "ViT: attention rollout"},
    "compare.map.grad_rollout": {"en": "ViT: rollout for '{name}'", "ko": "ViT: '{name}'에 대한 rollout"},
    "compare.map.gradcam": {"en": "CNN: Grad-CAM for '{name}'", "ko": "CNN: '{name}'에 대한 Grad-CAM"},
    "compare.ig_toggle": {
        "en": "Also integrated gradients (both models, 32 steps)",
        "ko": "통합 기울기(integrated gradients)도 보기 (두 모델, 32단계)",
    },
    "compare.map.ig_vit": {"en": "ViT: integrated gradients", "ko": "ViT: 통합 기울기"},
    "compare.map.ig_cnn": {"en": "CNN: integrated gradients", "ko": "CNN: 통합 기울기"},
    "compare.ig_note": {
        "en": "Integrated gradients (Sundararajan et al. 2017) need nothing but a model's gradient, so they read both families the same way: pixel by pixel, from a black image to this one.",
        "ko": "통합 기울기(Sundararajan 외, 2017)는 모델의 기울기만 있으면 되므로 두 종류의 모델을 똑같이 읽습니다. 검은 이미지에서 이 이미지까지 픽셀 단위로 봅니다.",
    },
    "compare.reach_title": {"en": "How far does each look, layer by layer?", "ko": "층마다 얼마나 멀리 볼까?"},
    "compare.reach_intro": {
        "en": (
            "Left: the CNN's theoretical receptive field, the square of input pixels one unit of a layer depends on, "
            "from its kernels, strides and pools: it can only grow, step by step. Right: the ViT's mean attention "
            "distance per layer and head (ViT paper, Fig. 7 right), in pixels of the same input (scaled to the CNN's when "
            "the two read different sizes)."
        ),
        "ko": (
            "왼쪽: CNN의 이론적 수용 영역, 곧 한 층의 유닛 하나가 의존하는 입력 픽셀의 정사각형으로, 커널·스트라이드·풀링으로 "
            "계산합니다. 층을 지날수록 조금씩 커지기만 합니다. 오른쪽: ViT의 층·헤드별 평균 어텐션 거리(ViT 논문 Fig. 7 "
            "오른쪽)로, 같은 입력의 픽셀 단위입니다(두 모델의 입력 크기가 다르면 CNN 입력에 맞춰 환산)."
        ),
    },
    "compare.reach.cnn": {"en": "CNN: receptive field", "ko": "CNN: 수용 영역"},
    "compare.reach.vit": {"en": "ViT: mean attention distance", "ko": "ViT: 평균 어텐션 거리"},
    "compare.reach.y": {"en": "pixels of the input", "ko": "입력 픽셀"},
    "compare.reach.x_cnn": {"en": "CNN layer", "ko": "CNN 층"},
    "compare.reach.x_vit": {"en": "ViT layer", "ko": "ViT 층"},
    "compare.reach.image": {"en": "image side", "ko": "이미지 한 변"},
    "compare.reach_reading": {
        "en": "On this image, the ViT's farthest-looking head in layer 1 averages {vit:.1f} px, while the CNN's first convolution sees {cnn} px and its receptive field first covers the whole {side} px image at {layer}.",
        "ko": "이 이미지에서 ViT 1층의 가장 멀리 보는 헤드는 평균 {vit:.1f} px 떨어진 곳을 보고, CNN의 첫 합성곱은 {cnn} px를 보며, 수용 영역은 {layer}에서 처음으로 {side} px 이미지 전체를 덮습니다.",
    },
    "compare.reach_never": {"en": "never", "ko": "끝까지 덮지 못함"},
    "compare.experiments": {"en": "Experiments: what does each need?", "ko": "실험: 각 모델에 필요한 것은?"},
    "compare.experiments_intro": {
        "en": (
            "Change the input, or take something from the ViT, and see both answers before and after. Shuffle the "
            "patches: a ViT without position information could not tell, with it the drop shows how much it relies "
            "on position, and the CNN loses its spatial structure. Shift the image: a CNN's filters move with it. "
            "Remove the ViT's position embeddings: the CNN has none to lose. Or hide the patches you choose."
        ),
        "ko": (
            "입력을 바꾸거나 ViT에서 무언가를 빼고, 두 모델의 답이 어떻게 바뀌는지 봅니다. 패치 섞기: 위치 정보가 없는 ViT는 "
            "알아채지 못하고, 위치 정보가 있으면 떨어지는 만큼 위치에 기대고 있다는 뜻이며, CNN은 공간 구조를 잃습니다. "
            "이미지 옮기기: CNN의 필터는 이미지와 함께 움직입니다. ViT의 위치 임베딩 빼기: CNN에는 뺄 것이 없습니다."
        ),
    },
    "compare.experiment": {"en": "Experiment", "ko": "실험"},
    "compare.exp.shuffle": {"en": "Shuffle the patches", "ko": "패치 섞기"},
    "compare.exp.shift": {"en": "Shift the image", "ko": "이미지 옮기기"},
    "compare.exp.no_position": {"en": "Remove the ViT's position embeddings", "ko": "ViT의 위치 임베딩 빼기"},
    "compare.exp.hide": {"en": "Hide the patches you click", "ko": "누른 패치 가리기"},
    "compare.hide_hint": {
        "en": "Click a patch on the image to hide it from both models (the dataset's mean colour), click it again to show it: {n} hidden.",
        "ko": "이미지에서 패치를 누르면 두 모델 모두에게서 가려지고(데이터셋의 평균 색), 다시 누르면 보입니다. 지금 {n}개를 가렸습니다.",
    },
    "compare.hide_clear": {"en": "Show every patch again", "ko": "모든 패치 다시 보이기"},
    "compare.shift_px": {
        "en": "Shift right and down by (pixels, wrapping round)",
        "ko": "오른쪽 아래로 옮길 거리 (픽셀, 넘친 부분은 반대편으로)",
    },
    "compare.seed": {"en": "Shuffle number (another order)", "ko": "섞기 번호 (다른 순서)"},
    "compare.col.model": {"en": "Model", "ko": "모델"},
    "compare.col.before": {"en": "Before", "ko": "전"},
    "compare.col.after": {"en": "After", "ko": "후"},
    "compare.answer": {"en": "{name} ({p:.0%})", "ko": "{name} ({p:.0%})"},
    "compare.na": {"en": "does not apply", "ko": "해당 없음"},
    "compare.input_title": {"en": "What the ViT sees now", "ko": "지금 ViT가 보는 입력"},
    "compare.download": {"en": "Download the maps and the answers (NPZ)", "ko": "지도와 답 내려받기 (NPZ)"},
    # (end of 8. ViT vs CNN)
    # ---- 9. model card ----
    "card.intro": {
        "en": "What this model is: its architecture and size, and for the shipped model how it was trained and how well it does.",
        "ko": "이 모델이 무엇인지 보여 줍니다. 구조와 크기, 그리고 함께 제공되는 모델이라면 어떻게 학습했고 성능이 어떤지도 보여 줍니다.",
    },
    "card.params": {"en": "Parameters", "ko": "파라미터 수"},
    "card.flops": {"en": "Compute per image", "ko": "이미지당 연산량"},
    "card.tokens": {"en": "Tokens x width", "ko": "토큰 수 x 폭"},
    "card.accuracy": {"en": "Test accuracy", "ko": "테스트 정확도"},
    "card.by_module": {"en": "Parameters by module", "ko": "모듈별 파라미터 수"},
    "card.col.module": {"en": "Module", "ko": "모듈"},
    "card.col.params": {"en": "Parameters", "ko": "파라미터"},
    "card.col.share": {"en": "Share", "ko": "비율"},
    "card.config": {"en": "Configuration", "ko": "설정"},
    "card.training": {"en": "Training", "ko": "학습 과정"},
    "card.curve.epoch": {"en": "epoch", "ko": "에폭"},
    "card.curve.loss": {"en": "loss", "ko": "손실"},
    "card.curve.accuracy": {"en": "accuracy", "ko": "정확도"},
    "card.curve.lr": {"en": "learning rate", "ko": "학습률"},
    "card.curve.train_loss": {"en": "train loss", "ko": "학습 손실"},
    "card.curve.test_loss": {"en": "test loss", "ko": "테스트 손실"},
    "card.curve.test_accuracy": {"en": "test accuracy", "ko": "테스트 정확도"},
    "card.curve.train_accuracy": {"en": "train accuracy (augmented)", "ko": "학습 정확도 (증강된 이미지)"},
    "card.curve.stage": {"en": "stage {n}", "ko": "{n}단계"},
    "card.stages": {
        "en": "Trained in {count} stages, each starting from the weights the one before ended with, on a learning-rate schedule of its own: {stages}. The recipe table has a column per stage.",
        "ko": "{count}단계로 학습했습니다. 각 단계는 앞 단계가 끝난 가중치에서 시작해 자기만의 학습률 스케줄로 학습합니다: {stages}. 학습 설정 표에는 단계마다 열이 하나씩 있습니다.",
    },
    "card.stage": {"en": "stage {n}, {name} (epochs {first}-{last})", "ko": "{n}단계 {name} ({first}-{last}에폭)"},
    "card.trained_on": {"en": "Trained on", "ko": "학습 데이터"},
    "card.tested_on": {"en": "Tested on", "ko": "테스트 데이터"},
    "card.epochs": {"en": "Epochs", "ko": "에폭 수"},
    "card.wall_time": {"en": "Training time", "ko": "학습 시간"},
    "card.hardware": {"en": "Hardware", "ko": "하드웨어"},
    "card.hardware_cpu": {"en": "CPU ({name}, {threads} threads)", "ko": "CPU ({name}, 스레드 {threads}개)"},
    "card.recipe": {
        "en": "Training recipe (epochs: as run, of those planned)",
        "ko": "학습 설정 (에폭: 실제로 학습한 수 / 계획한 수)",
    },
    "card.cut_short": {"en": "{run} of {planned}", "ko": "{planned} 중 {run}"},
    "card.col.stage": {"en": "stage {n}", "ko": "{n}단계"},
    "card.col.fact": {"en": "Fact", "ko": "항목"},
    "card.col.setting": {"en": "Setting", "ko": "설정 이름"},
    "card.col.value": {"en": "Value", "ko": "값"},
    "card.split": {"en": "{dataset}, {n} images", "ko": "{dataset}, 이미지 {n}장"},
    "card.per_class": {"en": "Test accuracy by class", "ko": "클래스별 테스트 정확도"},
    "card.interim": {
        "en": "An interim checkpoint: epoch {epochs} of {total}. Training goes on, and a better model replaces this one when it beats it.",
        "ko": "중간 체크포인트입니다: 전체 {total}에폭 중 {epochs}에폭. 학습은 계속되며, 더 나은 모델이 나오면 이 모델을 대신합니다.",
    },
    "card.no_history": {
        "en": "No training record comes with this model: training curves are shown for the model this project trains and ships.",
        "ko": "이 모델에는 학습 기록이 없습니다. 학습 곡선은 이 프로젝트가 직접 학습해 제공하는 모델에서 볼 수 있습니다.",
    },
    # (end of 9. model card)
    # ---- lab: misclassification ----
    "mistakes.intro": {
        "en": (
            "The model runs once over every CIFAR-10 test image; here are the images it gets wrong. The confusion "
            "matrix shows which classes it mixes up; the gallery shows the mistakes themselves, the most confident "
            "first. Pick one to see where the model looked for the class it chose and for the true class, and after "
            "which block the true class lost."
        ),
        "ko": (
            "모델이 CIFAR-10 테스트 이미지 전체를 한 번 훑고, 여기서는 틀린 이미지를 모아 봅니다. 혼동 행렬은 어떤 클래스끼리 "
            "헷갈리는지, 갤러리는 틀린 이미지 자체를 확신이 높은 것부터 보여 줍니다. 하나를 고르면 모델이 고른 클래스와 정답 "
            "클래스를 찾으려고 각각 어디를 봤는지, 그리고 정답 클래스가 몇 번째 블록에서 밀려났는지 볼 수 있습니다."
        ),
    },
    "mistakes.no_data": {
        "en": (
            "This server has no test images. Whoever runs it can point it at an ImageFolder copy of CIFAR-10 "
            "(`streamlit run app.py -- --data FOLDER`, or the VITVIZ_DATA variable), or, with a network, download "
            "CIFAR-10 with the button below (about 170 MB)."
        ),
        "ko": (
            "이 서버에는 테스트 이미지가 없습니다. 서버를 실행하는 사람이 CIFAR-10 ImageFolder 사본을 지정하거나"
            "(`streamlit run app.py -- --data FOLDER` 또는 VITVIZ_DATA 변수), 네트워크가 된다면 아래 버튼으로 "
            "CIFAR-10을 내려받을 수 있습니다(약 170 MB)."
        ),
    },
    "mistakes.bad_data": {
        "en": "This server's test images could not be read: {message}",
        "ko": "이 서버의 테스트 이미지를 읽지 못했습니다: {message}",
    },
    "mistakes.data": {
        "en": "On the {dataset} test split: {n} images.",
        "ko": "{dataset} 테스트 세트 {n}장 기준입니다.",
    },
    "mistakes.stored": {
        "en": "These results were stored when the model was first evaluated (or shipped with it); the speed is that run's.",
        "ko": "이 결과는 모델을 처음 평가할 때(또는 모델과 함께 제공될 때) 저장된 것이며, 속도도 그때 잰 값입니다.",
    },
    "mistakes.download": {"en": "Download CIFAR-10 with torchvision", "ko": "torchvision으로 CIFAR-10 내려받기"},
    "mistakes.downloading": {"en": "Downloading CIFAR-10…", "ko": "CIFAR-10을 내려받는 중…"},
    "mistakes.download_failed": {"en": "The download did not work: {message}", "ko": "내려받지 못했습니다: {message}"},
    "mistakes.loading": {"en": "Reading the test images…", "ko": "테스트 이미지를 읽는 중…"},
    "mistakes.evaluating": {
        "en": "Running the model over the test images: {done} of {total}",
        "ko": "테스트 이미지에 모델을 실행하는 중: {total}장 중 {done}장",
    },
    "mistakes.mismatch": {
        "en": "This lab needs a model that predicts the dataset's classes. {message}",
        "ko": "이 실험실에는 데이터셋의 클래스를 예측하는 모델이 필요합니다. {message}",
    },
    "mistakes.accuracy": {"en": "Test accuracy", "ko": "테스트 정확도"},
    "mistakes.misclassified": {"en": "Misclassified", "ko": "틀린 이미지"},
    "mistakes.of": {"en": "{m} of {n}", "ko": "{n}장 중 {m}장"},
    "mistakes.speed": {"en": "Evaluation speed", "ko": "평가 속도"},
    "mistakes.speed_value": {"en": "{speed} images/s", "ko": "초당 {speed}장"},
    "mistakes.per_class_title": {"en": "Accuracy per true class", "ko": "정답 클래스별 정확도"},
    "mistakes.confusion_title": {
        "en": "Confusion matrix (click a cell to see its images)",
        "ko": "혼동 행렬 (칸을 누르면 그 이미지를 봅니다)",
    },
    "mistakes.axis_true": {"en": "True class", "ko": "정답 클래스"},
    "mistakes.axis_predicted": {"en": "Predicted class", "ko": "예측 클래스"},
    "mistakes.filters": {"en": "Which images?", "ko": "어떤 이미지를 볼까요?"},
    "mistakes.filter_true": {"en": "True class", "ko": "정답 클래스"},
    "mistakes.filter_predicted": {"en": "Predicted class", "ko": "예측 클래스"},
    "mistakes.any": {"en": "(any)", "ko": "(전체)"},
    "mistakes.confidence": {
        "en": "Confidence (probability of the predicted class)",
        "ko": "확신도 (예측 클래스의 확률)",
    },
    "mistakes.confident_only": {"en": "Only confidently wrong", "ko": "확신하고 틀린 것만"},
    "mistakes.threshold": {"en": "Top probability above", "ko": "최고 확률이 이 값보다 큼"},
    "mistakes.count": {"en": "{m} images match.", "ko": "조건에 맞는 이미지는 {m}장입니다."},
    "mistakes.correct_cell": {
        "en": "This is a cell on the diagonal: these images are classified correctly as '{name}'.",
        "ko": "대각선 위의 칸입니다. 이 이미지들은 '{name}'(으)로 올바르게 분류되었습니다.",
    },
    "mistakes.none": {
        "en": "No image matches these filters: widen the confidence range or choose other classes.",
        "ko": "조건에 맞는 이미지가 없습니다. 확신도 범위를 넓히거나 다른 클래스를 고르세요.",
    },
    "mistakes.gallery": {"en": "Gallery", "ko": "갤러리"},
    "mistakes.page_back": {"en": "Previous page", "ko": "이전 쪽"},
    "mistakes.page_forward": {"en": "Next page", "ko": "다음 쪽"},
    "mistakes.image_back": {"en": "Previous image", "ko": "이전 이미지"},
    "mistakes.image_forward": {"en": "Next image", "ko": "다음 이미지"},
    "mistakes.page_of": {
        "en": "Page {page} of {pages}: images {start}–{stop} of {count}, most confident first.",
        "ko": "{pages}쪽 중 {page}쪽: {count}장 중 {start}–{stop}번째, 확신이 높은 것부터.",
    },
    "mistakes.caption": {
        "en": "#{n} {true} → {predicted} ({confidence})",
        "ko": "#{n} {true} → {predicted} ({confidence})",
    },
    "mistakes.detail": {"en": "One image up close", "ko": "이미지 하나 자세히 보기"},
    "mistakes.choose": {
        "en": "Image number (#) in the gallery: click a thumbnail, or type",
        "ko": "갤러리의 이미지 번호 (#): 썸네일을 누르거나 입력하세요",
    },
    "mistakes.verdict": {
        "en": "`{file}`: true class **{true}**, predicted **{predicted}** with probability {confidence}.",
        "ko": "`{file}`: 정답 클래스 **{true}**, 예측 **{predicted}** (확률 {confidence}).",
    },
    "mistakes.top5_title": {"en": "Top 5 classes", "ko": "상위 5개 클래스"},
    "mistakes.true_rank": {
        "en": "The true class '{name}' is number {rank} of {k} in the final prediction.",
        "ko": "정답 클래스 '{name}'는 최종 예측에서 {k}개 중 {rank}위입니다.",
    },
    "mistakes.maps_title": {
        "en": "Where did the model look for each class?",
        "ko": "모델은 각 클래스를 찾으려고 어디를 봤을까?",
    },
    "mistakes.maps_intro": {
        "en": (
            "Gradient-weighted attention rollout (Chefer et al. 2021): every block's attention is weighted by how much "
            "it raises the class's logit, only the links that push towards the class are kept, and the blocks are "
            "chained as in attention rollout. Left: the patches that support the class the model chose; right: those "
            "that support the true class."
        ),
        "ko": (
            "Gradient 가중 attention rollout (Chefer 외, 2021): 블록마다 어텐션에 그 클래스의 logit을 얼마나 올리는지를 "
            "곱해 클래스 쪽으로 미는 연결만 남기고, attention rollout처럼 블록을 이어 곱합니다. 왼쪽은 모델이 고른 클래스를, "
            "오른쪽은 정답 클래스를 뒷받침하는 패치입니다."
        ),
    },
    "mistakes.maps_no_cls": {
        "en": "This model has no [CLS] token, so the maps follow the average of the patch tokens, which is what its head reads.",
        "ko": "이 모델에는 [CLS] 토큰이 없으므로, 지도는 head가 읽는 패치 토큰의 평균을 따라갑니다.",
    },
    "mistakes.map_predicted": {"en": "For the predicted class '{name}'", "ko": "예측 클래스 '{name}'"},
    "mistakes.map_true": {"en": "For the true class '{name}'", "ko": "정답 클래스 '{name}'"},
    "mistakes.lens_title": {"en": "When did the true class lose?", "ko": "정답 클래스는 언제 밀려났을까?"},
    "mistakes.lens_intro": {
        "en": (
            "The logit lens: the final LayerNorm and the head read the residual stream after every block "
            "(0: the embeddings, before layer 1). The two lines follow the true and the predicted class; "
            "hover to see their ranks."
        ),
        "ko": (
            "Logit lens: 층마다 그 뒤의 residual stream에 마지막 LayerNorm과 head를 적용해 봅니다(0: 1층에 들어가기 전의 "
            "임베딩). 두 선은 정답 클래스와 예측 클래스를 따라가며, 마우스를 올리면 순위가 보입니다."
        ),
    },
    "mistakes.lens_chart": {
        "en": "Probability of the true and the predicted class after each layer",
        "ko": "각 층 뒤 정답 클래스와 예측 클래스의 확률",
    },
    "mistakes.x_block": {"en": "After layer (0 = the embeddings)", "ko": "지난 층 (0 = 임베딩)"},
    "mistakes.y_prob": {"en": "Probability", "ko": "확률"},
    "mistakes.series_true": {"en": "true: {name}", "ko": "정답: {name}"},
    "mistakes.series_predicted": {"en": "predicted: {name}", "ko": "예측: {name}"},
    "mistakes.hover": {
        "en": "after layer {block}: rank of {true} {rank_true}, of {predicted} {rank_predicted}",
        "ko": "{block}층 뒤: {true} {rank_true}위, {predicted} {rank_predicted}위",
    },
    "mistakes.lost_at": {
        "en": "'{name}' was the top answer after layer {block} and lost the lead in layer {next} (blocks[{index}]).",
        "ko": "'{name}'는 {block}층 뒤에는 1위였다가 {next}층 (blocks[{index}])에서 1위를 내주었습니다.",
    },
    "mistakes.lost_at_embed": {
        "en": "'{name}' was the top answer of the embeddings alone and lost the lead in layer 1 (blocks[0]).",
        "ko": "'{name}'는 임베딩만 읽었을 때는 1위였다가 1층 (blocks[0])에서 1위를 내주었습니다.",
    },
    "mistakes.never_top": {
        "en": "'{name}' was never the top answer, after any layer.",
        "ko": "'{name}'는 어느 층 뒤에서도 1위가 된 적이 없습니다.",
    },
    "mistakes.other": {"en": "Compare with a second model", "ko": "두 번째 모델과 비교"},
    "mistakes.other_none": {"en": "(none)", "ko": "(없음)"},
    "mistakes.other_path": {"en": "or a model file (.safetensors path)", "ko": "또는 모델 파일 (.safetensors 경로)"},
    "mistakes.other_failed": {
        "en": "The second model cannot be compared: {message}",
        "ko": "두 번째 모델과 비교할 수 없습니다: {message}",
    },
    "mistakes.agree.first_right": {"en": "this model right", "ko": "이 모델 맞음"},
    "mistakes.agree.first_wrong": {"en": "this model wrong", "ko": "이 모델 틀림"},
    "mistakes.agree.second_right": {"en": "second model right", "ko": "두 번째 모델 맞음"},
    "mistakes.agree.second_wrong": {"en": "second model wrong", "ko": "두 번째 모델 틀림"},
    "mistakes.pair": {"en": "Which images?", "ko": "어떤 이미지?"},
    "mistakes.pair.first_wrong": {"en": "this model wrong", "ko": "이 모델이 틀린 것"},
    "mistakes.pair.first_only": {
        "en": "this model wrong, the second right",
        "ko": "이 모델은 틀리고 두 번째는 맞힌 것",
    },
    "mistakes.pair.both": {"en": "both wrong", "ko": "둘 다 틀린 것"},
    "mistakes.pair.second_only": {
        "en": "this model right, the second wrong",
        "ko": "이 모델은 맞히고 두 번째는 틀린 것",
    },
    "mistakes.other_answer": {
        "en": "Second model: **{predicted}** ({confidence}), {verdict}.",
        "ko": "두 번째 모델: **{predicted}** ({confidence}), {verdict}.",
    },
    "mistakes.other_right": {"en": "right", "ko": "맞음"},
    "mistakes.other_wrong": {"en": "wrong", "ko": "틀림"},
    "mistakes.open_tour": {"en": "Open in the tour", "ko": "둘러보기에서 열기"},
    "mistakes.open_tour_help": {
        "en": "Make this test image the sidebar's image and go to the overview.",
        "ko": "이 테스트 이미지를 사이드바의 이미지로 정하고 전체 흐름 페이지로 갑니다.",
    },
    "mistakes.no_tour": {
        "en": "Only images read from class folders can be opened in the tour.",
        "ko": "클래스 폴더에서 읽은 이미지만 둘러보기에서 열 수 있습니다.",
    },
    "mistakes.download_csv": {"en": "Download the filtered list (CSV)", "ko": "걸러 낸 목록 내려받기 (CSV)"},
    # (end of lab: misclassification)
}


# Class names as models and datasets spell them, in the other languages: CIFAR-10's ten. A class
# with no entry (ImageNet's thousand, a user's own) is shown as the model names it.
# English words a Korean page keeps on purpose: names of the model's parts and operations as
# the paper and the code write them (Korean ML texts write them so too), library names, units and file formats.
# tests/test_korean_pages.py fails on any other English word a Korean page shows.
KEPT_TERMS = frozenset(
    [
        "vit",
        "cls",
        "mlp",
        "gelu",
        "relu",
        "layernorm",
        "linear",
        "softmax",
        "attention",
        "rollout",
        "query",
        "key",
        "stream",
        "norm",
        "attn",
        "qkv",
        "proj",
        "cos",
        "mean",
        "std",
        "logit",
        "lens",
        "cifar",
        "jpeg",
        "gflop",
        "cpu",
        "gpu",
        "pca",
        "conv",
        "timm",
        "resnet",
    ]
)


CLASS_NAMES: dict[str, dict[str, str]] = {
    "airplane": {"ko": "비행기"},
    "automobile": {"ko": "자동차"},
    "bird": {"ko": "새"},
    "cat": {"ko": "고양이"},
    "deer": {"ko": "사슴"},
    "dog": {"ko": "개"},
    "frog": {"ko": "개구리"},
    "horse": {"ko": "말"},
    "ship": {"ko": "배"},
    "truck": {"ko": "트럭"},
}


def class_label(name: str, lang: str = DEFAULT_LANGUAGE, short: bool = False) -> str:
    """A class name as users of ``lang`` read it: "고양이 (cat)" in Korean (or "고양이" when
    ``short``, for small captions), the name itself when there is no translation. The name in
    brackets is the one files, folders and downloads use."""
    translated = CLASS_NAMES.get(name, {}).get(lang)
    if not translated:
        return name
    return translated if short else f"{translated} ({name})"


def t(key: str, lang: str = DEFAULT_LANGUAGE, **values: object) -> str:
    """The sentence for ``key`` in ``lang``, with ``{name}`` fields filled from ``values``.

    Raises:
        KeyError: for a key that does not exist (a bug, caught by the tests).
    """
    entry = TEXT[key]
    text = entry.get(lang) or entry[DEFAULT_LANGUAGE]
    return text.format(**values) if values else text


class TranslatedError(Exception):
    """An error whose message is an i18n sentence: ``str(err)`` is English, ``sentence(lang)``
    gives it in any language. Subclasses also derive from the built-in error they stand for.

    Attributes:
        key: the i18n key of the sentence.
        values: the values that fill the sentence's fields.
    """

    def __init__(self, key: str, **values: object) -> None:
        self.key = key
        self.values = values
        super().__init__(t(key, **values))

    def sentence(self, lang: str) -> str:
        return t(self.key, lang, **self.values)


def missing() -> list[tuple[str, str]]:
    """(key, language) pairs with no text: the i18n test requires this to be empty."""
    return [(key, lang) for key, entry in TEXT.items() for lang in LANGUAGES if not entry.get(lang, "").strip()]
