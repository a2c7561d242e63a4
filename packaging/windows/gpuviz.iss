; Inno Setup 6 script for gpuviz on Windows (x64). Written, NOT built or tested here: the
; project's machines run Linux only. See docs/installers.md.
;
; Build on a Windows machine (Python 3.11+, Inno Setup 6 on PATH as iscc):
;   py -3.11 -m venv .venv
;   .venv\Scripts\pip install -e . pyinstaller==6.22.3 pyinstaller-hooks-contrib==2026.9
;   .venv\Scripts\pyinstaller --noconfirm --distpath dist --workpath build\pyinstaller packaging\gpuviz.spec
;   iscc /DAppVersion=0.1.0 packaging\windows\gpuviz.iss
; Output: dist\gpuviz-0.1.0-windows-x64-setup.exe, a per-user or per-machine installer of
; the one-folder bundle dist\gpuviz\ (gpuviz.exe + _internal\). No network access is needed
; to install or to run it.

#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif
#define AppName "gpuviz"
#define AppExe "gpuviz.exe"

[Setup]
; A fixed GUID keeps upgrades and uninstall working across versions: never change it.
AppId={{6C0F3B9E-4B53-4F5A-9E8B-5A1D2C7E9F41}
AppName={#AppName}
AppVersion={#AppVersion}
AppVerName={#AppName} {#AppVersion}
AppPublisher=gpuviz developers
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
; Per-user install without admin rights by default (classrooms, kiosks); the dialog lets an
; administrator install for all users.
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
; Qt 6.11 supports Windows 10 1809 and later.
MinVersion=10.0.17763
SourceDir=..\..
OutputDir=dist
OutputBaseFilename=gpuviz-{#AppVersion}-windows-x64-setup
SetupIconFile=packaging\windows\gpuviz.ico
UninstallDisplayIcon={app}\{#AppExe}
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
; The whole PyInstaller one-folder bundle.
Source: "dist\gpuviz\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\{#AppName}"; Filename: "{app}\{#AppExe}"; Comment: "Interactive figures that teach GPU and LLM-systems performance"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#AppExe}"; Tasks: desktopicon

[Run]
Filename: "{app}\{#AppExe}"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent

[UninstallDelete]
; Only what the app itself writes next to the program (nothing today); settings live in the
; registry (HKCU\Software\gpuviz) and are kept on uninstall on purpose.
Type: filesandordirs; Name: "{app}\_internal\__pycache__"
